# ruff: noqa: I001, UP031  (the program's own style, kept)
"""junyanz/pytorch-CycleGAN-and-pix2pix: the training steps of ``models/cycle_gan_model.py``
(two ResNet generators with instance norm, two PatchGAN discriminators, LSGAN loss, identity
and cycle L1 losses, ImagePools, ``set_requires_grad``, Adam over ``itertools.chain``) and
``models/pix2pix_model.py`` (a U-Net generator with batch norm and dropout, a conditional
PatchGAN, vanilla GAN loss plus L1), with ``train.py``'s ``update_learning_rate`` (the
linear policy; ``plateau`` for pix2pix's second scheduler) and ``print_current_losses``
lines (without the clock), plus ``cal_gradient_penalty`` as the ``wgangp`` mode uses it.
Written as a script over ``networks.py`` (``cyclegan_networks.py``), without the BaseModel
class, options parser, visualizer and datasets: random 1 x 3 x 32 x 32 image pairs, ngf/ndf 4,
``resnet_6blocks``, a 5-level U-Net (``unet_128`` has 7), 3 epochs of 2 iterations,
pool size 2.
"""
import itertools
import random

import torch

import networks


class Opt:
    lr = 0.0002
    beta1 = 0.5
    lr_policy = 'linear'
    epoch_count = 1
    n_epochs = 1
    n_epochs_decay = 2
    lambda_identity = 0.5
    lambda_A = 10.0
    lambda_B = 10.0
    lambda_L1 = 100.0
    pool_size = 2


def set_requires_grad(nets, requires_grad=False):
    if not isinstance(nets, list):
        nets = [nets]
    for net in nets:
        if net is not None:
            for param in net.parameters():
                param.requires_grad = requires_grad


def print_current_losses(epoch, iters, losses):
    message = '(epoch: %d, iters: %d) ' % (epoch, iters)
    for k, v in losses.items():
        message += '%s: %.3f ' % (k, v)
    print(message)


def print_networks(nets, verbose):
    print('---------- Networks initialized -------------')
    for name, net in nets.items():
        num_params = 0
        for param in net.parameters():
            num_params += param.numel()
        if verbose:
            print(net)
        print('[Network %s] Total number of parameters : %.3f M' % (name, num_params / 1e6))
    print('-----------------------------------------------')


if __name__ == '__main__':
    torch.manual_seed(0)
    random.seed(0)
    opt = Opt()
    data = [(torch.rand(1, 3, 32, 32) * 2 - 1, torch.rand(1, 3, 32, 32) * 2 - 1) for _ in range(2)]

    # CycleGAN
    netG_A = networks.define_G(3, 3, 4, 'resnet_6blocks', 'instance', False, 'normal', 0.02)
    netG_B = networks.define_G(3, 3, 4, 'resnet_6blocks', 'instance', False, 'normal', 0.02)
    netD_A = networks.define_D(3, 4, 'basic', 3, 'instance', 'normal', 0.02)
    netD_B = networks.define_D(3, 4, 'n_layers', 2, 'instance', 'xavier', 0.02)
    print_networks({'G_A': netG_A, 'D_B': netD_B}, True)
    fake_A_pool = networks.ImagePool(opt.pool_size)
    fake_B_pool = networks.ImagePool(opt.pool_size)
    criterionGAN = networks.GANLoss('lsgan')
    criterionCycle = torch.nn.L1Loss()
    criterionIdt = torch.nn.L1Loss()
    optimizer_G = torch.optim.Adam(itertools.chain(netG_A.parameters(), netG_B.parameters()), lr=opt.lr, betas=(opt.beta1, 0.999))
    optimizer_D = torch.optim.Adam(itertools.chain(netD_A.parameters(), netD_B.parameters()), lr=opt.lr, betas=(opt.beta1, 0.999))
    optimizers = [optimizer_G, optimizer_D]
    schedulers = [networks.get_scheduler(optimizer, opt) for optimizer in optimizers]

    def backward_D_basic(netD, real, fake):
        pred_real = netD(real)
        loss_D_real = criterionGAN(pred_real, True)
        pred_fake = netD(fake.detach())
        loss_D_fake = criterionGAN(pred_fake, False)
        loss_D = (loss_D_real + loss_D_fake) * 0.5
        loss_D.backward()
        return loss_D

    total_iters = 0
    for epoch in range(opt.epoch_count, opt.n_epochs + opt.n_epochs_decay + 1):
        old_lr = optimizers[0].param_groups[0]['lr']
        for scheduler in schedulers:
            scheduler.step()
        lr = optimizers[0].param_groups[0]['lr']
        print('learning rate %.7f -> %.7f' % (old_lr, lr))
        for real_A, real_B in data:
            total_iters += 1
            fake_B = netG_A(real_A)
            rec_A = netG_B(fake_B)
            fake_A = netG_B(real_B)
            rec_B = netG_A(fake_A)

            set_requires_grad([netD_A, netD_B], False)
            optimizer_G.zero_grad()
            idt_A = netG_A(real_B)
            loss_idt_A = criterionIdt(idt_A, real_B) * opt.lambda_B * opt.lambda_identity
            idt_B = netG_B(real_A)
            loss_idt_B = criterionIdt(idt_B, real_A) * opt.lambda_A * opt.lambda_identity
            loss_G_A = criterionGAN(netD_A(fake_B), True)
            loss_G_B = criterionGAN(netD_B(fake_A), True)
            loss_cycle_A = criterionCycle(rec_A, real_A) * opt.lambda_A
            loss_cycle_B = criterionCycle(rec_B, real_B) * opt.lambda_B
            loss_G = loss_G_A + loss_G_B + loss_cycle_A + loss_cycle_B + loss_idt_A + loss_idt_B
            loss_G.backward()
            optimizer_G.step()

            set_requires_grad([netD_A, netD_B], True)
            optimizer_D.zero_grad()
            loss_D_A = backward_D_basic(netD_A, real_B, fake_B_pool.query(fake_B))
            loss_D_B = backward_D_basic(netD_B, real_A, fake_A_pool.query(fake_A))
            optimizer_D.step()

            losses = dict(D_A=loss_D_A, G_A=loss_G_A, cycle_A=loss_cycle_A, idt_A=loss_idt_A,
                          D_B=loss_D_B, G_B=loss_G_B, cycle_B=loss_cycle_B, idt_B=loss_idt_B)
            print_current_losses(epoch, total_iters, {k: float(v) for k, v in losses.items()})

    # pix2pix
    netG = networks.UnetGenerator(3, 3, 5, 4, norm_layer=networks.get_norm_layer('batch'), use_dropout=True)
    networks.init_weights(netG, 'normal', 0.02)
    netD = networks.define_D(3 + 3, 4, 'basic', 3, 'batch', 'normal', 0.02)
    netP = networks.define_D(3, 4, 'pixel', 3, 'batch', 'kaiming', 0.02)
    print_networks({'G': netG, 'P': netP}, False)
    criterionGAN = networks.GANLoss('vanilla')
    criterionL1 = torch.nn.L1Loss()
    optimizer_G = torch.optim.Adam(netG.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))
    optimizer_D = torch.optim.Adam(netD.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))
    opt.lr_policy = 'plateau'
    plateau = networks.get_scheduler(optimizer_D, opt)
    netG.eval()  # dropout off for the comparison (the repo keeps it on: --eval is off in train)
    for real_A, real_B in data * 2:
        fake_B = netG(real_A)
        set_requires_grad(netD, True)
        optimizer_D.zero_grad()
        fake_AB = torch.cat((real_A, fake_B), 1)
        pred_fake = netD(fake_AB.detach())
        loss_D_fake = criterionGAN(pred_fake, False)
        real_AB = torch.cat((real_A, real_B), 1)
        pred_real = netD(real_AB)
        loss_D_real = criterionGAN(pred_real, True)
        loss_D = (loss_D_fake + loss_D_real) * 0.5
        loss_D.backward()
        optimizer_D.step()
        set_requires_grad(netD, False)
        optimizer_G.zero_grad()
        fake_AB = torch.cat((real_A, fake_B), 1)
        pred_fake = netD(fake_AB)
        loss_G_GAN = criterionGAN(pred_fake, True)
        loss_G_L1 = criterionL1(fake_B, real_B) * opt.lambda_L1
        loss_G = loss_G_GAN + loss_G_L1
        loss_G.backward()
        optimizer_G.step()
        plateau.step(loss_G_L1)
        print_current_losses(1, 0, dict(G_GAN=loss_G_GAN.item(), G_L1=loss_G_L1.item(),
                                        D_real=loss_D_real.item(), D_fake=loss_D_fake.item()))
    print('pixel D output', tuple(netP(real_A).shape), '%.6f' % netP(real_A).mean().item())

    # wgangp
    set_requires_grad(netD_A, True)
    gp, gradients = networks.cal_gradient_penalty(netD_A, data[0][1], fake_B_pool.images[0], 'cpu')
    gp.backward()
    print('gradient penalty %.6f' % gp.item(), tuple(gradients.shape),
          '%.6f' % netD_A.model[0].weight.grad.abs().sum().item())
    print(networks.GANLoss('wgangp')(gradients, True).item(), networks.GANLoss('wgangp')(gradients, False).item())
