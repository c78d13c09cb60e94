"""Type stubs of the pydevice package (also what ``from cuda import device`` gives)."""

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar, Union, overload

from .errors import (
    ArgumentError as ArgumentError,
    BoundsError as BoundsError,
    KernelRaised as KernelRaised,
    CompileError as CompileError,
    DeviceFault as DeviceFault,
    Diagnostic as Diagnostic,
    DeviceMismatchError as DeviceMismatchError,
    DriverError as DriverError,
    HostError as HostError,
    LaunchError as LaunchError,
    NoDriverError as NoDriverError,
    PydeviceError as PydeviceError,
)
from ._types import Atomic as Atomic, ConstExpr as ConstExpr, ScalarType, Vector as Vector, align as align

__version__: str

Dim3Like = Union[int, Tuple[int], Tuple[int, int], Tuple[int, int, int]]
"""The spec's Dim3Like: an int or a tuple of one to three ints."""
StreamLike = Any
"""A cuda.core Stream, anything with ``__cuda_stream__``, a CuPy or PyTorch stream, an int
handle, or None (the legacy default stream)."""
TypeSpec = Union[str, Tuple[Any, ...]]
"""A parameter type: numba notation (``"float32[:, ::1]"``), a name the module defines (a
``@struct`` class, ``float32x4``), or a tuple of type specs."""

_F = TypeVar("_F", bound=Callable[..., Any])
_C = TypeVar("_C", bound=type)

class _Entry:
    underlying: Callable[..., Any]
    options: Dict[str, Any]
    dialect: str
    def typed_ir(self, *args: Any, types: Optional[Union[str, Sequence[TypeSpec]]] = ..., arch: Optional[str] = ...) -> str: ...
    def llvm_ir(self, *args: Any, types: Optional[Union[str, Sequence[TypeSpec]]] = ..., arch: Optional[str] = ..., opt: int = ...) -> str: ...
    def ptx(self, *args: Any, types: Optional[Union[str, Sequence[TypeSpec]]] = ..., arch: Optional[str] = ..., opt: int = ...) -> str: ...
    def abi(self, *args: Any, types: Optional[Union[str, Sequence[TypeSpec]]] = ...) -> Dict[str, Any]: ...
    def header(self) -> str: ...

class Kernel(_Entry):
    def __getitem__(self, config: Tuple[Any, ...]) -> Callable[..., None]: ...
    def attributes(self, *args: Any, types: Optional[Sequence[TypeSpec]] = ..., device: Optional[int] = ...) -> Dict[str, int]: ...
    def occupancy(self, *args: Any, block: int, shared: int = ..., types: Optional[Sequence[TypeSpec]] = ..., device: Optional[int] = ...) -> Dict[str, float]: ...
    def suggested_block_size(self, *args: Any, shared: int = ..., types: Optional[Sequence[TypeSpec]] = ..., device: Optional[int] = ...) -> Tuple[int, int]: ...
    def check_bounds(self, *args: Any, types: Optional[Sequence[TypeSpec]] = ..., device: Optional[int] = ...) -> None: ...
    @property
    def specializations(self) -> List[List[str]]: ...

class Func(_Entry):
    interop: bool
    def __call__(self, *args: Any) -> Any: ...

@overload
def kernel(fn: Callable[..., Any]) -> Kernel: ...
@overload
def kernel(*, interop: bool = ..., max_threads: int = ..., min_blocks: int = ..., fastmath: bool = ..., lineinfo: bool = ..., debug: bool = ..., bounds_check: bool = ...) -> Callable[[Callable[..., Any]], Kernel]: ...
@overload
def func(fn: Callable[..., Any]) -> Func: ...
@overload
def func(*, interop: bool = ..., extern: Union[bool, str] = ...) -> Callable[[Callable[..., Any]], Func]: ...
@overload
def struct(cls: _C) -> _C: ...
@overload
def struct(*, align: int) -> Callable[[_C], _C]: ...
def launch(f: Kernel, *args: Any, grid: Dim3Like, block: Dim3Like, stream: StreamLike = ..., shared: int = ...) -> None: ...
def compile_ptx(f: _Entry, signature: Union[str, Sequence[TypeSpec]], *, arch: str = ..., opt: int = ...) -> str: ...
def header(obj: _Entry) -> str: ...
def synchronize(stream: StreamLike = ..., device: Optional[int] = ...) -> None: ...
def device_count() -> int: ...
def copy(dst: Any, src: Any, *, stream: StreamLike = ..., src_stream: StreamLike = ..., via_host: bool = ...) -> str: ...
def set_cache_dir(path: Optional[str]) -> None: ...
def cache_stats() -> Dict[str, int]: ...
def machine_representation() -> str: ...
def driver_available() -> bool: ...
def compiler_version() -> str: ...

bool: ScalarType
int8: ScalarType
int16: ScalarType
int32: ScalarType
int64: ScalarType
uint8: ScalarType
uint16: ScalarType
uint32: ScalarType
uint64: ScalarType
float16: ScalarType
bfloat16: ScalarType
float32: ScalarType
float64: ScalarType
complex64: ScalarType
complex128: ScalarType
float8e4m3: ScalarType
float8e5m2: ScalarType
Dim3: type

def __getattr__(name: str) -> Any: ...
