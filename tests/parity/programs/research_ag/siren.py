# ruff: noqa: E231, E701, E261, E303, UP031, W291, W293  (the notebook's own style, kept)
"""
vsitzmann/siren, ``explore_siren.ipynb`` as a script: ``get_mgrid``, ``SineLayer`` with its
custom initialisation, ``Siren``, ``forward_with_activations``, ``laplace`` / ``divergence``
/ ``gradient`` through ``torch.autograd.grad(create_graph=True)``, then the notebook's
image-fitting loop and its Poisson-equation loop (fitting the image's gradient, so training
differentiates through the gradient). Shrunk: a 16 x 16 synthetic image (the notebook's is
skimage's cameraman at 256, through torchvision transforms and a DataLoader of one item),
hidden width 32, 2 hidden layers, 30 steps (500), a summary every 10; the plots become
printed statistics. The image's gradient (the notebook uses scipy's Sobel filter) is the
finite difference computed with ``torch`` here.
"""
from collections import OrderedDict

import numpy as np
import torch
from torch import nn


def get_mgrid(sidelen, dim=2):
    '''Generates a flattened grid of (x,y,...) coordinates in a range of -1 to 1.
    sidelen: int
    dim: int'''
    tensors = tuple(dim * [torch.linspace(-1, 1, steps=sidelen)])
    mgrid = torch.stack(torch.meshgrid(*tensors), dim=-1)
    mgrid = mgrid.reshape(-1, dim)
    return mgrid


class SineLayer(nn.Module):
    # See paper sec. 3.2, final paragraph, and supplement Sec. 1.5 for discussion of omega_0.
    
    # If is_first=True, omega_0 is a frequency factor which simply multiplies the activations before the 
    # nonlinearity. Different signals may require different omega_0 in the first layer - this is a 
    # hyperparameter.
    
    # If is_first=False, then the weights will be divided by omega_0 so as to keep the magnitude of 
    # activations constant, but boost gradients to the weight matrix (see supplement Sec. 1.5)
    
    def __init__(self, in_features, out_features, bias=True,
                 is_first=False, omega_0=30):
        super().__init__()
        self.omega_0 = omega_0
        self.is_first = is_first
        
        self.in_features = in_features
        self.linear = nn.Linear(in_features, out_features, bias=bias)
        
        self.init_weights()
    
    def init_weights(self):
        with torch.no_grad():
            if self.is_first:
                self.linear.weight.uniform_(-1 / self.in_features, 
                                             1 / self.in_features)      
            else:
                self.linear.weight.uniform_(-np.sqrt(6 / self.in_features) / self.omega_0, 
                                             np.sqrt(6 / self.in_features) / self.omega_0)
        
    def forward(self, input):
        return torch.sin(self.omega_0 * self.linear(input))
    
    def forward_with_intermediate(self, input): 
        # For visualization of activation distributions
        intermediate = self.omega_0 * self.linear(input)
        return torch.sin(intermediate), intermediate
    
    
class Siren(nn.Module):
    def __init__(self, in_features, hidden_features, hidden_layers, out_features, outermost_linear=False, 
                 first_omega_0=30, hidden_omega_0=30.):
        super().__init__()
        
        self.net = []
        self.net.append(SineLayer(in_features, hidden_features, 
                                  is_first=True, omega_0=first_omega_0))

        for i in range(hidden_layers):
            self.net.append(SineLayer(hidden_features, hidden_features, 
                                      is_first=False, omega_0=hidden_omega_0))

        if outermost_linear:
            final_linear = nn.Linear(hidden_features, out_features)
            
            with torch.no_grad():
                final_linear.weight.uniform_(-np.sqrt(6 / hidden_features) / hidden_omega_0, 
                                              np.sqrt(6 / hidden_features) / hidden_omega_0)
                
            self.net.append(final_linear)
        else:
            self.net.append(SineLayer(hidden_features, out_features, 
                                      is_first=False, omega_0=hidden_omega_0))
        
        self.net = nn.Sequential(*self.net)
    
    def forward(self, coords):
        coords = coords.clone().detach().requires_grad_(True) # allows to take derivative w.r.t. input
        output = self.net(coords)
        return output, coords        

    def forward_with_activations(self, coords, retain_grad=False):
        '''Returns not only model output, but also intermediate activations.
        Only used for visualizing activations later!'''
        activations = OrderedDict()

        activation_count = 0
        x = coords.clone().detach().requires_grad_(True)
        activations['input'] = x
        for i, layer in enumerate(self.net):
            if isinstance(layer, SineLayer):
                x, intermed = layer.forward_with_intermediate(x)
                
                if retain_grad:
                    x.retain_grad()
                    intermed.retain_grad()
                    
                activations['_'.join((str(layer.__class__), "%d" % activation_count))] = intermed
                activation_count += 1
            else: 
                x = layer(x)
                
                if retain_grad:
                    x.retain_grad()
                    
            activations['_'.join((str(layer.__class__), "%d" % activation_count))] = x
            activation_count += 1

        return activations


def laplace(y, x):
    grad = gradient(y, x)
    return divergence(grad, x)


def divergence(y, x):
    div = 0.
    for i in range(y.shape[-1]):
        div += torch.autograd.grad(y[..., i], x, torch.ones_like(y[..., i]), create_graph=True)[0][..., i:i+1]
    return div


def gradient(y, x, grad_outputs=None):
    if grad_outputs is None:
        grad_outputs = torch.ones_like(y)
    grad = torch.autograd.grad(y, [x], grad_outputs=grad_outputs, create_graph=True)[0]
    return grad


def get_image_tensor(sidelen):
    # stands in for skimage.data.camera() through Resize / ToTensor / Normalize(0.5, 0.5)
    xs = torch.linspace(0, 1, sidelen)
    img = 0.5 + 0.5 * torch.sin(6 * xs)[:, None] * torch.cos(4 * xs)[None, :]
    img = (img - 0.5) / 0.5
    return img[None]


class ImageFitting(torch.utils.data.Dataset):
    def __init__(self, sidelength):
        super().__init__()
        img = get_image_tensor(sidelength)
        self.pixels = img.permute(1, 2, 0).view(-1, 1)
        self.coords = get_mgrid(sidelength, 2)

    def __len__(self):
        return 1

    def __getitem__(self, idx):    
        if idx > 0: raise IndexError
            
        return self.coords, self.pixels


if __name__ == "__main__":
    torch.manual_seed(0)
    sidelen = 16
    cameraman = ImageFitting(sidelen)
    dataloader = torch.utils.data.DataLoader(cameraman, batch_size=1, pin_memory=True, num_workers=0)

    img_siren = Siren(in_features=2, out_features=1, hidden_features=32, 
                      hidden_layers=2, outermost_linear=True)

    total_steps = 30 # Since the whole image is our dataset, this just means 500 gradient descent steps.
    steps_til_summary = 10

    optim = torch.optim.Adam(lr=1e-4, params=img_siren.parameters())

    model_input, ground_truth = next(iter(dataloader))
    print(model_input.shape, ground_truth.shape)

    for step in range(total_steps):
        model_output, coords = img_siren(model_input)    
        loss = ((model_output - ground_truth)**2).mean()
        
        if not step % steps_til_summary:
            print("Step %d, Total loss %0.6f" % (step, loss))
            img_grad = gradient(model_output, coords)
            img_laplacian = laplace(model_output, coords)
            print("  grad norm %.6f, laplacian mean %.6f, laplacian std %.6f" % (
                img_grad.norm(dim=-1).mean(), img_laplacian.mean(), img_laplacian.std()))

        optim.zero_grad()
        loss.backward()
        optim.step()

    activations = img_siren.forward_with_activations(model_input, retain_grad=True)
    output = activations[next(reversed(activations))]
    output.mean().backward()
    for key, act in activations.items():
        grad = act.grad
        print(key, tuple(act.shape), "%.6f" % act.mean().item(),
              "grad %.6g" % grad.abs().mean().item() if grad is not None else "no grad")

    # Poisson equation: fit the image's gradient, so every step differentiates a gradient
    img = get_image_tensor(sidelen)[0]
    gx = torch.zeros_like(img)
    gy = torch.zeros_like(img)
    gx[1:-1, :] = (img[2:, :] - img[:-2, :]) / (4.0 / (sidelen - 1))
    gy[:, 1:-1] = (img[:, 2:] - img[:, :-2]) / (4.0 / (sidelen - 1))
    gt_grad = torch.stack([gx, gy], dim=-1).view(1, -1, 2)

    poisson_siren = Siren(in_features=2, out_features=1, hidden_features=32,
                          hidden_layers=2, outermost_linear=True)
    optim = torch.optim.Adam(lr=1e-4, params=poisson_siren.parameters())
    for step in range(total_steps):
        model_output, coords = poisson_siren(model_input)
        train_loss = ((gradient(model_output, coords) - gt_grad)**2).sum(-1).mean()
        if not step % steps_til_summary:
            print("Step %d, Total loss %0.6f" % (step, train_loss))
        optim.zero_grad()
        train_loss.backward()
        optim.step()
    print("first layer weight", poisson_siren.net[0].linear.weight[:2].detach())
