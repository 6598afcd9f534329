"""Devices, storage and kernel compilation. Executes what it is given; knows no tensors."""

from tolk.runtime.device import Device, DeviceError, buffer_storage, get_device, typed_view

__all__ = ["Device", "DeviceError", "buffer_storage", "get_device", "typed_view"]
