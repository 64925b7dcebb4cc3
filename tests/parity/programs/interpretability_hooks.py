# The cores of two interpretability repositories, re-implemented in our own words on a tiny
# CNN, not copied: jacobgil/pytorch-grad-cam (`pytorch_grad_cam/activations_and_gradients.py`,
# `base_cam.py`, `grad_cam.py`; MIT) and utkuozbulak/pytorch-cnn-visualizations
# (`src/vanilla_backprop.py`, `src/guided_backprop.py`, `src/integrated_gradients.py`; MIT).
# It keeps their torch calls and habits: `torch.autograd.Variable(x, requires_grad=True)`,
# `register_forward_hook` on a target layer that
# stores the activation and puts `output.register_hook(...)` on it for the gradient, hook
# handles kept and `.remove()`d; `model.zero_grad()`, a class score summed over the batch and
# `loss.backward(retain_graph=True)` (or, batched, `CrossEntropyLoss` against
# `torch.argmax(outputs_flattened, axis=-1)`); Grad-CAM weights as the gradient's spatial mean,
# ReLU of the weighted activation sum, upscaled to the image (here with
# `F.interpolate(mode="bilinear", align_corners=False)` where the repository calls
# cv2.resize) and min-max normalised; vanilla backprop through a one-hot
# `model_output.backward(gradient=one_hot_output)` with the image gradient caught by a
# backward hook on the first layer; guided backprop, whose ReLU hooks
# (`register_full_backward_hook`; the repository uses the deprecated
# `register_backward_hook`) return a modified `grad_input` (positive gradient where the
# forward output was positive); integrated gradients over `np.arange(steps + 1) / steps`
# scaled images; and input x gradient through `torch.autograd.grad`.
# Changes: a small CNN trained a few Adam steps on synthetic images (no pretrained
# torchvision model, no image files, no cv2/PIL), results printed instead of saved as images.
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class TinyCNN(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 4, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.Conv2d(4, 6, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(6 * 4 * 4, num_classes))

    def forward(self, x):
        return self.classifier(self.features(x))


model = TinyCNN()
print(model)
images = torch.randn(6, 3, 8, 8)
labels = torch.tensor([0, 1, 2, 0, 1, 2])
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
for step in range(3):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(images), labels)
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.6f}")
model.eval()


# -- Grad-CAM ------------------------------------------------------------------------------
class ActivationsAndGradients:
    """Catches a layer's activations (forward hook) and their gradients (a tensor hook set
    from that forward hook)."""

    def __init__(self, model, target_layers):
        self.model = model
        self.gradients = []
        self.activations = []
        self.handles = []
        for target_layer in target_layers:
            self.handles.append(target_layer.register_forward_hook(self.save_activation))
            self.handles.append(target_layer.register_forward_hook(self.save_gradient))

    def save_activation(self, module, input, output):
        self.activations.append(output.cpu().detach())

    def save_gradient(self, module, input, output):
        if not hasattr(output, "requires_grad") or not output.requires_grad:
            return

        def _store_grad(grad):
            self.gradients = [grad.cpu().detach()] + self.gradients

        output.register_hook(_store_grad)

    def __call__(self, x):
        self.gradients = []
        self.activations = []
        return self.model(x)

    def release(self):
        for handle in self.handles:
            handle.remove()


class ClassifierOutputTarget:
    def __init__(self, category):
        self.category = category

    def __call__(self, model_output):
        if len(model_output.shape) == 1:
            return model_output[self.category]
        return model_output[:, self.category]


class GradCAM:
    def __init__(self, model, target_layers):
        self.model = model.eval()
        self.target_layers = target_layers
        self.activations_and_grads = ActivationsAndGradients(model, target_layers)

    def get_cam_weights(self, grads):
        return np.mean(grads, axis=(2, 3))

    def get_cam_image(self, activations, grads):
        weights = self.get_cam_weights(grads)
        weighted_activations = weights[:, :, None, None] * activations
        return weighted_activations.sum(axis=1)

    def scale_cam_image(self, cam, target_size):
        result = []
        for img in cam:
            img = img - np.min(img)
            img = img / (1e-7 + np.max(img))
            result.append(img)
        scaled = F.interpolate(torch.from_numpy(np.float32(result))[:, None], size=target_size,
                               mode="bilinear", align_corners=False)
        return scaled[:, 0].numpy()

    def __call__(self, input_tensor, targets=None, is_batched=False):
        input_tensor = torch.autograd.Variable(input_tensor, requires_grad=True)
        outputs = self.activations_and_grads(input_tensor)
        if is_batched:  # one cross-entropy over the batch against the predicted classes
            num_classes = outputs.size()[-1]
            outputs_flattened = outputs.view(-1, num_classes)
            targets = torch.argmax(outputs_flattened, axis=-1)
            self.model.zero_grad()
            loss = torch.nn.CrossEntropyLoss()(outputs_flattened, targets)
            loss.backward(retain_graph=True)
        else:
            if targets is None:
                target_categories = np.argmax(outputs.cpu().data.numpy(), axis=-1)
                targets = [ClassifierOutputTarget(category) for category in target_categories]
            self.model.zero_grad()
            loss = sum([target(output) for target, output in zip(targets, outputs)])
            loss.backward(retain_graph=True)
        activations = self.activations_and_grads.activations[0].numpy()
        grads = self.activations_and_grads.gradients[0].numpy()
        cam = np.maximum(self.get_cam_image(activations, grads), 0)
        return self.scale_cam_image(cam, tuple(input_tensor.shape[-2:]))

    def __del__(self):
        self.activations_and_grads.release()


cam = GradCAM(model=model, target_layers=[model.features[2]])
grayscale_cam = cam(images[:2].clone())
print("grad-cam", grayscale_cam.shape, np.round(grayscale_cam[0, 0], 4), round(float(grayscale_cam.sum()), 4))
batched_cam = cam(images[2:5].clone(), is_batched=True)
print("batched grad-cam", np.round(batched_cam[1, 2], 4))
cam.activations_and_grads.release()
print("hooks left after release:", len(model.features[2]._forward_hooks))


# -- vanilla backprop ------------------------------------------------------------------------
class VanillaBackprop:
    def __init__(self, model):
        self.model = model
        self.gradients = None
        self.model.eval()
        self.hook_layers()

    def hook_layers(self):
        def hook_function(module, grad_in, grad_out):
            self.gradients = grad_in[0]

        first_layer = list(self.model.features._modules.items())[0][1]
        self.handle = first_layer.register_full_backward_hook(hook_function)

    def generate_gradients(self, input_image, target_class):
        model_output = self.model(input_image)
        self.model.zero_grad()
        one_hot_output = torch.FloatTensor(1, model_output.size()[-1]).zero_()
        one_hot_output[0][target_class] = 1
        model_output.backward(gradient=one_hot_output)
        return self.gradients.data.numpy()[0]


image = images[:1].clone().requires_grad_()
vbp = VanillaBackprop(model)
vanilla_grads = vbp.generate_gradients(image, 1)
print("vanilla", vanilla_grads.shape, np.round(vanilla_grads[0, 0], 5))


# -- guided backprop -------------------------------------------------------------------------
class GuidedBackprop:
    def __init__(self, model):
        self.model = model
        self.gradients = None
        self.forward_relu_outputs = []
        self.handles = []
        self.model.eval()
        self.update_relus()
        self.hook_layers()

    def hook_layers(self):
        def hook_function(module, grad_in, grad_out):
            self.gradients = grad_in[0]

        first_layer = list(self.model.features._modules.items())[0][1]
        self.handles.append(first_layer.register_full_backward_hook(hook_function))

    def update_relus(self):
        def relu_backward_hook_function(module, grad_in, grad_out):
            positive = self.forward_relu_outputs[-1].clone()
            positive[positive > 0] = 1
            modified_grad_out = positive * torch.clamp(grad_in[0], min=0.0)
            del self.forward_relu_outputs[-1]
            return (modified_grad_out,)

        def relu_forward_hook_function(module, ten_in, ten_out):
            self.forward_relu_outputs.append(ten_out.detach())

        for pos, module in self.model.features._modules.items():
            if isinstance(module, nn.ReLU):
                self.handles.append(module.register_full_backward_hook(relu_backward_hook_function))
                self.handles.append(module.register_forward_hook(relu_forward_hook_function))

    def generate_gradients(self, input_image, target_class):
        model_output = self.model(input_image)
        self.model.zero_grad()
        one_hot_output = torch.FloatTensor(1, model_output.size()[-1]).zero_()
        one_hot_output[0][target_class] = 1
        model_output.backward(gradient=one_hot_output)
        return self.gradients.data.numpy()[0]


vbp.handle.remove()
gbp = GuidedBackprop(model)
image.grad = None
guided_grads = gbp.generate_gradients(image, 1)
print("guided", np.round(guided_grads[0, 0], 5))
pos_saliency = (np.maximum(0, guided_grads) / guided_grads.max())
neg_saliency = (np.maximum(0, -guided_grads) / -guided_grads.min())
print("saliency", round(float(pos_saliency.sum()), 4), round(float(neg_saliency.sum()), 4))
for handle in gbp.handles:
    handle.remove()


# -- integrated gradients --------------------------------------------------------------------
class IntegratedGradients(VanillaBackprop):
    def generate_images_on_linear_path(self, input_image, steps):
        step_list = np.arange(steps + 1) / steps
        return [input_image * step for step in step_list]

    def generate_integrated_gradients(self, input_image, target_class, steps):
        xbar_list = self.generate_images_on_linear_path(input_image, steps)
        integrated_grads = np.zeros(input_image.size())
        for xbar_image in xbar_list:
            single_integrated_grad = self.generate_gradients(xbar_image, target_class)
            integrated_grads = integrated_grads + single_integrated_grad / steps
        return integrated_grads[0]


ig = IntegratedGradients(model)
integrated_grads = ig.generate_integrated_gradients(image, 2, 4)
print("integrated", np.round(integrated_grads[0, 0], 5))
ig.handle.remove()


# -- input x gradient through torch.autograd.grad --------------------------------------------
x = images[2:4].clone().requires_grad_()
scores = model(x)
score = scores.gather(1, scores.argmax(dim=1, keepdim=True)).sum()
(grad_x,) = torch.autograd.grad(score, x)
attribution = (grad_x * x).sum(dim=1)
print("input x gradient", attribution.shape, attribution[0, 0])
print(f"max attribution {attribution.abs().max().item():.6f}")
