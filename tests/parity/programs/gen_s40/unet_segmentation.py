# ruff: noqa: E501, I001, UP008  (the program's own style, kept)
"""
milesial/Pytorch-UNet (GPL-3.0 licence: written in our own words after ``unet/unet_parts.py``,
``unet/unet_model.py``, ``utils/dice_score.py``, ``evaluate.py``, ``train.py`` and
``predict.py``, not copied): ``DoubleConv`` (conv / BatchNorm / ``ReLU(inplace=True)`` twice),
``Down`` (``MaxPool2d(2)``), ``Up`` with ``nn.Upsample(scale_factor=2, mode="bilinear",
align_corners=True)`` or ``ConvTranspose2d(k=2, s=2)``, ``F.pad`` by the computed size
differences (36 x 36 inputs: 9 -> 4 -> upsampled 8, padded to 9), ``torch.cat`` skips,
``use_checkpointing`` through ``torch.utils.checkpoint``; the dice coefficient
(``torch.where(sets_sum == 0, inter, sets_sum)``, ``flatten(0, 1)``) and dice loss; the
training step (RMSprop ``foreach=True`` with momentum and weight decay,
``ReduceLROnPlateau('max', patience=...)`` on the validation dice, ``torch.cuda.amp.GradScaler
(enabled=False)``, ``torch.autocast(enabled=False)``, ``zero_grad(set_to_none=True)``,
``clip_grad_norm_``), cross-entropy plus dice of ``F.softmax`` against ``F.one_hot(...)
.permute(0, 3, 1, 2)`` (3 classes) or BCE-with-logits plus dice of ``F.sigmoid`` (1 class),
``evaluate`` under ``torch.inference_mode()`` (``argmax`` one-hot, ``[:, 1:]``) and
``predict_img``'s ``F.interpolate(..., mode="bilinear")`` back to the input size. Shrunk:
random 3 x 36 x 36 images and masks, base width 4 (64 in the original), 3 steps per model.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor
from torch import optim


class DoubleConv(nn.Module):
    """(convolution => [BN] => ReLU) * 2"""

    def __init__(self, in_channels, out_channels, mid_channels=None):
        super().__init__()
        if not mid_channels:
            mid_channels = out_channels
        self.double_conv = nn.Sequential(
            nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(mid_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True)
        )

    def forward(self, x):
        return self.double_conv(x)


class Down(nn.Module):
    """Downscaling with maxpool then double conv"""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.maxpool_conv = nn.Sequential(
            nn.MaxPool2d(2),
            DoubleConv(in_channels, out_channels)
        )

    def forward(self, x):
        return self.maxpool_conv(x)


class Up(nn.Module):
    """Upscaling then double conv"""

    def __init__(self, in_channels, out_channels, bilinear=True):
        super().__init__()

        # if bilinear, use the normal convolutions to reduce the number of channels
        if bilinear:
            self.up = nn.Upsample(scale_factor=2, mode='bilinear', align_corners=True)
            self.conv = DoubleConv(in_channels, out_channels, in_channels // 2)
        else:
            self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
            self.conv = DoubleConv(in_channels, out_channels)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        # input is CHW
        diffY = x2.size()[2] - x1.size()[2]
        diffX = x2.size()[3] - x1.size()[3]

        x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2,
                        diffY // 2, diffY - diffY // 2])
        x = torch.cat([x2, x1], dim=1)
        return self.conv(x)


class OutConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super(OutConv, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=1)

    def forward(self, x):
        return self.conv(x)


class UNet(nn.Module):
    def __init__(self, n_channels, n_classes, bilinear=False, base=64):
        super(UNet, self).__init__()
        self.n_channels = n_channels
        self.n_classes = n_classes
        self.bilinear = bilinear

        self.inc = (DoubleConv(n_channels, base))
        self.down1 = (Down(base, base * 2))
        self.down2 = (Down(base * 2, base * 4))
        self.down3 = (Down(base * 4, base * 8))
        factor = 2 if bilinear else 1
        self.down4 = (Down(base * 8, base * 16 // factor))
        self.up1 = (Up(base * 16, base * 8 // factor, bilinear))
        self.up2 = (Up(base * 8, base * 4 // factor, bilinear))
        self.up3 = (Up(base * 4, base * 2 // factor, bilinear))
        self.up4 = (Up(base * 2, base, bilinear))
        self.outc = (OutConv(base, n_classes))

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x4 = self.down3(x3)
        x5 = self.down4(x4)
        x = self.up1(x5, x4)
        x = self.up2(x, x3)
        x = self.up3(x, x2)
        x = self.up4(x, x1)
        logits = self.outc(x)
        return logits

    def use_checkpointing(self):
        self.inc = torch.utils.checkpoint(self.inc)
        self.down1 = torch.utils.checkpoint(self.down1)


def dice_coeff(input: Tensor, target: Tensor, reduce_batch_first: bool = False, epsilon: float = 1e-6):
    # Average of Dice coefficient for all batches, or for a single mask
    assert input.size() == target.size()
    assert input.dim() == 3 or not reduce_batch_first

    sum_dim = (-1, -2) if input.dim() == 2 or not reduce_batch_first else (-1, -2, -3)

    inter = 2 * (input * target).sum(dim=sum_dim)
    sets_sum = input.sum(dim=sum_dim) + target.sum(dim=sum_dim)
    sets_sum = torch.where(sets_sum == 0, inter, sets_sum)

    dice = (inter + epsilon) / (sets_sum + epsilon)
    return dice.mean()


def multiclass_dice_coeff(input: Tensor, target: Tensor, reduce_batch_first: bool = False, epsilon: float = 1e-6):
    # Average of Dice coefficient for all classes
    return dice_coeff(input.flatten(0, 1), target.flatten(0, 1), reduce_batch_first, epsilon)


def dice_loss(input: Tensor, target: Tensor, multiclass: bool = False):
    # Dice loss (objective to minimize) between 0 and 1
    fn = multiclass_dice_coeff if multiclass else dice_coeff
    return 1 - fn(input, target, reduce_batch_first=True)


@torch.inference_mode()
def evaluate(net, dataloader, device, amp):
    net.eval()
    num_val_batches = len(dataloader)
    dice_score = 0

    # iterate over the validation set
    with torch.autocast(device.type if device.type != 'mps' else 'cpu', enabled=amp):
        for batch in dataloader:
            image, mask_true = batch['image'], batch['mask']

            # move images and labels to correct device and type
            image = image.to(device=device, dtype=torch.float32, memory_format=torch.channels_last)
            mask_true = mask_true.to(device=device, dtype=torch.long)

            # predict the mask
            mask_pred = net(image)

            if net.n_classes == 1:
                assert mask_true.min() >= 0 and mask_true.max() <= 1, 'True mask indices should be in [0, 1]'
                mask_pred = (F.sigmoid(mask_pred) > 0.5).float()
                # compute the Dice score
                dice_score += dice_coeff(mask_pred.squeeze(1), mask_true, reduce_batch_first=False)
            else:
                assert mask_true.min() >= 0 and mask_true.max() < net.n_classes, 'True mask indices should be in [0, n_classes['
                # convert to one-hot format
                mask_true = F.one_hot(mask_true, net.n_classes).permute(0, 3, 1, 2).float()
                mask_pred = F.one_hot(mask_pred.argmax(dim=1), net.n_classes).permute(0, 3, 1, 2).float()
                # compute the Dice score, ignoring background
                dice_score += multiclass_dice_coeff(mask_pred[:, 1:], mask_true[:, 1:], reduce_batch_first=False)

    net.train()
    return dice_score / max(num_val_batches, 1)


def train_model(model, device, train_set, val_set, epochs=3, learning_rate=1e-5, weight_decay=1e-8,
                momentum=0.999, gradient_clipping=1.0, amp=False):
    optimizer = optim.RMSprop(model.parameters(),
                              lr=learning_rate, weight_decay=weight_decay, momentum=momentum, foreach=True)
    scheduler = optim.lr_scheduler.ReduceLROnPlateau(optimizer, 'max', patience=1)  # goal: maximize Dice score
    grad_scaler = torch.cuda.amp.GradScaler(enabled=amp)
    criterion = nn.CrossEntropyLoss() if model.n_classes > 1 else nn.BCEWithLogitsLoss()
    global_step = 0

    for epoch in range(1, epochs + 1):
        model.train()
        epoch_loss = 0
        for batch in train_set:
            images, true_masks = batch['image'], batch['mask']
            images = images.to(device=device, dtype=torch.float32, memory_format=torch.channels_last)
            true_masks = true_masks.to(device=device, dtype=torch.long)

            with torch.autocast(device.type if device.type != 'mps' else 'cpu', enabled=amp):
                masks_pred = model(images)
                if model.n_classes == 1:
                    loss = criterion(masks_pred.squeeze(1), true_masks.float())
                    loss += dice_loss(F.sigmoid(masks_pred.squeeze(1)), true_masks.float(), multiclass=False)
                else:
                    loss = criterion(masks_pred, true_masks)
                    loss += dice_loss(
                        F.softmax(masks_pred, dim=1).float(),
                        F.one_hot(true_masks, model.n_classes).permute(0, 3, 1, 2).float(),
                        multiclass=True
                    )

            optimizer.zero_grad(set_to_none=True)
            grad_scaler.scale(loss).backward()
            grad_scaler.unscale_(optimizer)
            total_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), gradient_clipping)
            grad_scaler.step(optimizer)
            grad_scaler.update()

            global_step += 1
            epoch_loss += loss.item()
            val_score = evaluate(model, val_set, device, amp)
            scheduler.step(val_score)
            print(f"epoch {epoch} step {global_step} loss {loss.item():.6f} grad norm {total_norm.item():.6f} "
                  f"dice {float(val_score):.6f} lr {optimizer.param_groups[0]['lr']:.3e}")
    return epoch_loss


def predict_img(net, full_img, device, out_threshold=0.5):
    net.eval()
    img = full_img.unsqueeze(0)
    img = img.to(device=device, dtype=torch.float32)

    with torch.no_grad():
        output = net(img).cpu()
        output = F.interpolate(output, (full_img.size(1) + 4, full_img.size(2) + 4), mode='bilinear')
        if net.n_classes > 1:
            mask = output.argmax(dim=1)
        else:
            mask = torch.sigmoid(output) > out_threshold

    return mask[0].long().squeeze().numpy()


device = torch.device('cpu')
torch.manual_seed(0)
for n_classes, bilinear in ((3, True), (1, False)):
    model = UNet(n_channels=3, n_classes=n_classes, bilinear=bilinear, base=4)
    model = model.to(memory_format=torch.channels_last)
    print(f"Network: {model.n_channels} input channels, {model.n_classes} output channels (classes), "
          f"{'Bilinear' if model.bilinear else 'Transposed conv'} upscaling, "
          f"{sum(p.numel() for p in model.parameters())} parameters")
    images = torch.randn(4, 3, 36, 36)
    masks = torch.randint(0, max(n_classes, 2), (4, 36, 36))
    train_set = [{'image': images, 'mask': masks}]
    val_set = [{'image': images + 0.1, 'mask': masks}]
    train_model(model, device, train_set, val_set, epochs=3, learning_rate=1e-3, momentum=0.9)
    mask = predict_img(model, images[0], device)
    print("predicted mask", mask.shape, mask.dtype, mask.sum(), mask[0, :8].tolist())
