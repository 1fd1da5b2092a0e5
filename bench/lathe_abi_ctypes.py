"""lathe's C ABI (include/lathe/abi.h, ABI v1) as ctypes structures, for the benchmark scripts
that call a built kernel object on torch's tensors outside lathe's worker."""
import ctypes as C


class DLDevice(C.Structure):
    _fields_ = [("device_type", C.c_int32), ("device_id", C.c_int32)]


class DLDataType(C.Structure):
    _fields_ = [("code", C.c_uint8), ("bits", C.c_uint8), ("lanes", C.c_uint16)]


class DLTensor(C.Structure):
    _fields_ = [("data", C.c_void_p), ("device", DLDevice), ("ndim", C.c_int32),
                ("dtype", DLDataType), ("shape", C.POINTER(C.c_int64)),
                ("strides", C.POINTER(C.c_int64)), ("byte_offset", C.c_uint64)]


class Args(C.Structure):
    _fields_ = [("abi_version", C.c_uint32), ("inputs", C.POINTER(DLTensor)),
                ("num_inputs", C.c_int32), ("outputs", C.POINTER(DLTensor)),
                ("num_outputs", C.c_int32), ("scalars", C.POINTER(C.c_double)),
                ("num_scalars", C.c_int32), ("workspace", C.c_void_p),
                ("workspace_bytes", C.c_size_t), ("stream", C.c_void_p),
                ("error", C.c_char_p), ("error_bytes", C.c_size_t)]


def load(so_path):
    """The object, with lathe_launch typed."""
    lib = C.CDLL(so_path)
    lib.lathe_launch.argtypes = [C.POINTER(Args)]
    lib.lathe_launch.restype = C.c_int
    return lib
