#!/usr/bin/env python3
"""export_cnn.py OUT.onnx [--size 224] [--width 64] — a ResNet-18-sized CNN
of our own (no torchvision), exported by Debian's torch (/usr/bin/python3,
torch 1.13) for kiln's convolution tests and bench rows.

The network is ResNet-18's shape: a 7x7 stride-2 conv (3 -> width) with
BatchNorm and ReLU, a 3x3 stride-2 max pool, four stages of two basic
blocks (3x3 convs with BatchNorm; the first block of stages 2-4 strides by 2
and projects its shortcut with a 1x1 stride-2 conv and BatchNorm), global
average pooling and a linear classifier to 1000 classes: 11.7M parameters
at width 64. Weights are seeded (torch.manual_seed(0)) and every BatchNorm
gets non-trivial running statistics and affine parameters, so folding them
into the convs is tested. The input is x [1, 3, size, size]."""
import argparse

import torch
import torch.nn as nn


def bn(c):
    b = nn.BatchNorm2d(c)
    with torch.no_grad():
        b.weight.uniform_(0.5, 1.5)
        b.bias.uniform_(-0.2, 0.2)
        b.running_mean.uniform_(-0.2, 0.2)
        b.running_var.uniform_(0.5, 1.5)
    return b


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = bn(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = bn(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), bn(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (self.down(x) if self.down is not None else x))


class Net(nn.Module):
    def __init__(self, width):
        super().__init__()
        w = width
        self.stem = nn.Sequential(nn.Conv2d(3, w, 7, 2, 3, bias=False), bn(w), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        layers, cin = [], w
        for i, cout in enumerate([w, 2 * w, 4 * w, 8 * w]):
            layers += [Block(cin, cout, 1 if i == 0 else 2), Block(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, 1000)

    def forward(self, x):
        y = self.layers(self.stem(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(y, 1), 1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--width", type=int, default=64)
    a = ap.parse_args()
    torch.manual_seed(0)
    net = Net(a.width).eval()
    x = torch.zeros(1, 3, a.size, a.size)
    torch.onnx.export(net, x, a.out, input_names=["x"], output_names=["logits"], opset_version=13,
                      training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)  # BatchNormalization kept: kiln folds it


if __name__ == "__main__":
    main()
