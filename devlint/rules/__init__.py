"""Every rule devlint knows, in code order."""

from __future__ import annotations

from devlint.rules.base import FlowRule, Invalid, Rule
from devlint.rules.cross_device_op import CrossDeviceOp
from devlint.rules.default_tensor_type import DefaultTensorType
from devlint.rules.deprecated_cuda_api import DeprecatedCudaApi
from devlint.rules.discarded_device_move import DiscardedDeviceMove
from devlint.rules.float64_on_mps import Float64OnMps
from devlint.rules.hardcoded_device_ordinal import HardcodedDeviceOrdinal
from devlint.rules.integer_device import IntegerDevice
from devlint.rules.load_without_map_location import LoadWithoutMapLocation
from devlint.rules.missing_device_move import MissingDeviceMove
from devlint.rules.newer_than_torch_floor import NewerThanTorchFloor
from devlint.rules.numpy_on_device_tensor import NumpyOnDeviceTensor
from devlint.rules.optimizer_device_move import OptimizerDeviceMove
from devlint.rules.packed_lengths_on_device import PackedLengthsOnDevice
from devlint.rules.parse_error import ParseError
from devlint.rules.tensor_attribute_not_buffer import TensorAttributeNotBuffer
from devlint.rules.unchecked_current_accelerator import UncheckedCurrentAccelerator
from devlint.rules.unguarded_cuda import UnguardedCuda
from devlint.rules.unguarded_cuda_runtime_call import UnguardedCudaRuntimeCall
from devlint.rules.unused_noqa import UnusedNoqa

ALL_RULES: tuple[type[Rule], ...] = (
    ParseError,
    UnguardedCuda,
    DeprecatedCudaApi,
    OptimizerDeviceMove,
    DiscardedDeviceMove,
    MissingDeviceMove,
    CrossDeviceOp,
    NumpyOnDeviceTensor,
    LoadWithoutMapLocation,
    TensorAttributeNotBuffer,
    HardcodedDeviceOrdinal,
    NewerThanTorchFloor,
    IntegerDevice,
    DefaultTensorType,
    UnguardedCudaRuntimeCall,
    UncheckedCurrentAccelerator,
    Float64OnMps,
    PackedLengthsOnDevice,
    UnusedNoqa,
)
RULES_BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in ALL_RULES}

__all__ = ["ALL_RULES", "RULES_BY_CODE", "FlowRule", "Invalid", "Rule"]
