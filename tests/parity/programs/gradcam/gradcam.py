# The Grad-CAM people copy into notebooks and blog posts (~60 lines: a class holding the
# target layer's activation from `register_forward_hook` and its output gradient from
# `register_full_backward_hook`, channel weights as the gradient's spatial mean, ReLU of the
# weighted sum, bilinear upsampling, min-max normalisation), as in jacobgil/pytorch-grad-cam's
# `GradCAM` reduced to its core; written for this test from that common form, on a small CNN
# trained a few steps on synthetic images. Ends with what those posts warn about: a full
# backward hook on a conv whose output a `ReLU(inplace=True)` then modifies (older torch
# raised there; torch 2.13 runs it, and so must shardflow: the CAM is printed, or the error).
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class SmallCNN(nn.Module):
    def __init__(self, num_classes=4, inplace=False):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=inplace), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=inplace),
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x):
        x = self.features(x)
        x = self.pool(x).flatten(1)
        return self.fc(x)


class GradCAM:
    def __init__(self, model, target_layer):
        self.model = model
        self.target_layer = target_layer
        self.gradients = None
        self.activations = None
        self.hook_handles = []
        self.hook_handles.append(target_layer.register_forward_hook(self.save_activation))
        self.hook_handles.append(target_layer.register_full_backward_hook(self.save_gradient))

    def save_activation(self, module, input, output):
        self.activations = output.detach()

    def save_gradient(self, module, grad_input, grad_output):
        self.gradients = grad_output[0].detach()

    def __call__(self, x, class_idx=None):
        self.model.zero_grad()
        output = self.model(x)
        if class_idx is None:
            class_idx = output.argmax(dim=1)
        one_hot = torch.zeros_like(output)
        one_hot.scatter_(1, class_idx.view(-1, 1), 1.0)
        output.backward(gradient=one_hot, retain_graph=True)

        weights = self.gradients.mean(dim=(2, 3), keepdim=True)
        cam = (weights * self.activations).sum(dim=1, keepdim=True)
        cam = F.relu(cam)
        cam = F.interpolate(cam, size=x.shape[2:], mode='bilinear', align_corners=False)
        cam_min = cam.view(cam.size(0), -1).min(dim=1)[0].view(-1, 1, 1, 1)
        cam_max = cam.view(cam.size(0), -1).max(dim=1)[0].view(-1, 1, 1, 1)
        cam = (cam - cam_min) / (cam_max - cam_min + 1e-8)
        return cam, class_idx

    def remove_hooks(self):
        for handle in self.hook_handles:
            handle.remove()


def make_data(n=32, size=16, num_classes=4, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.rand(n, 3, size, size).astype(np.float32) * 0.2
    y = rng.randint(0, num_classes, size=n)
    for i, c in enumerate(y):  # a bright square whose corner is the class
        r, col = divmod(int(c), 2)
        x[i, c % 3, r * 8:r * 8 + 6, col * 8:col * 8 + 6] += 0.8
    return torch.from_numpy(x), torch.from_numpy(y)


if __name__ == '__main__':
    torch.manual_seed(1)
    x, y = make_data()
    model = SmallCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(15):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        if epoch % 5 == 0:
            print(f'epoch {epoch} loss {loss.item():.5f}')
    model.eval()

    cam_extractor = GradCAM(model, model.features[4])
    cam, cls = cam_extractor(x[:4])
    print('predicted', cls.tolist(), 'labels', y[:4].tolist())
    print('cam', tuple(cam.shape), cam.dtype)
    print('activations', tuple(cam_extractor.activations.shape), 'gradients', tuple(cam_extractor.gradients.shape))
    print('cam mean per image', [round(v, 5) for v in cam.mean(dim=(1, 2, 3)).tolist()])
    print('cam argmax per image', cam.view(4, -1).argmax(dim=1).tolist())
    print(torch.round(cam[0, 0, ::4, ::4], decimals=3))
    cam2, _ = cam_extractor(x[4:6], class_idx=torch.tensor([1, 2]))
    print('forced classes cam sum', [round(v, 4) for v in cam2.sum(dim=(1, 2, 3)).tolist()])
    cam_extractor.remove_hooks()
    print('hooks left', len(model.features[4]._forward_hooks), len(model.features[4]._backward_hooks))

    broken = SmallCNN(inplace=True)
    broken.eval()
    extractor = GradCAM(broken, broken.features[4])
    try:
        cam3, _ = extractor(x[:2])
        print('inplace cam mean', round(cam3.mean().item(), 5), 'gradients', tuple(extractor.gradients.shape))
    except RuntimeError as e:
        print('RuntimeError:', str(e).split('\n')[0])
