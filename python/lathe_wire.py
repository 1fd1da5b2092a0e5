"""lathe's worker protocol (src/gate/cpu/wire.h) as ctypes structures, for the Python kernel worker.

The C++ header is the definition; these structures mirror it field for field, and ctypes lays
them out with the C compiler's rules on x86-64. tests/gate/python_kernel_test checks every size
and the offsets of the fields this worker reads against the compiler's offsetof.
"""

import ctypes as C

MAGIC = 0x4C415448
REGION_FD, COMMAND_FD, REPLY_FD, OBJECT_FD = 3, 4, 5, 6
RECORD_FD = 9  # with --op-record: the pipe of the ops the candidate ran, read by lathe alone
MAX_TENSORS, MAX_DIMS, MAX_SCALARS = 16, 8, 32
MESSAGE_BYTES = 512
MAX_COMPARED = 4

# wire::op
LOAD, SETUP, RUN, QUIT = 1, 2, 3, 4
UPLOAD, DOWNLOAD, FILL, POISON, SHARE = 5, 6, 7, 8, 9  # CUDA workers (lathe_cuda.py)
BENCH = 15
RUN_TABLE = 16

# wire::status
OK, KERNEL_ERROR, DLOPEN_FAILED, NO_LAUNCH, NO_ABI_TAG, ABI_MISMATCH, INIT_FAILED = 0, 1, 2, 3, 4, 5, 6
WORKSPACE_TOO_LARGE, BAD_COMMAND, DEVICE_ERROR, WRONG_OUTPUT = 7, 8, 9, 10
FORBIDDEN = 11  # a Python candidate ran what its policy forbids (lathe_ops.py)


class TensorDesc(C.Structure):
    _fields_ = [
        ("code", C.c_uint8), ("bits", C.c_uint8), ("ndim", C.c_uint8), ("is_output", C.c_uint8),
        ("type", C.c_uint8),
        ("shape", C.c_int64 * MAX_DIMS),
        ("offset", C.c_uint64), ("bytes", C.c_uint64),
        ("dist_kind", C.c_uint8), ("dist_a", C.c_double), ("dist_b", C.c_double),
        ("rtol", C.c_double), ("atol", C.c_double), ("nerr", C.c_double),
        ("slack", C.c_uint64),
    ]


class Command(C.Structure):
    _fields_ = [
        ("magic", C.c_uint32), ("kind", C.c_uint32),
        ("num_inputs", C.c_uint32), ("num_outputs", C.c_uint32), ("num_scalars", C.c_uint32),
        ("num_slots", C.c_uint32),
        ("slot_stride", C.c_uint64), ("workspace_limit", C.c_uint64), ("table_offset", C.c_uint64),
        ("table_entries", C.c_uint32),
        ("populate_bytes", C.c_uint64), ("written_from", C.c_uint64),
        ("tensors", TensorDesc * MAX_TENSORS),
        ("scalars", C.c_double * MAX_SCALARS),
        ("first_slot", C.c_uint32), ("rotate", C.c_uint32), ("window", C.c_uint32),
        ("calls", C.c_uint64),
        ("graph", C.c_uint32),
        ("oracle", C.c_uint32), ("share", C.c_uint32),
        ("seed", C.c_uint64), ("scale", C.c_double), ("shift", C.c_double),
        ("peer", C.c_uint32), ("peer_slot", C.c_uint32),
        ("ipc_handle", C.c_uint8 * 64),
        ("protocol", C.c_uint32), ("warmup", C.c_uint32), ("trials", C.c_uint32),
        ("warmup_ms", C.c_double), ("rep_ms", C.c_double),
    ]


class OutputStats(C.Structure):
    _fields_ = [
        ("unwritten", C.c_uint64), ("mismatches", C.c_uint64), ("nonfinite", C.c_uint64),
        ("first_unwritten", C.c_uint64), ("first_bad", C.c_uint64),
        ("got", C.c_double), ("want", C.c_double), ("max_abs", C.c_double), ("max_rel", C.c_double),
        ("sum_d", C.c_double), ("sum_r", C.c_double),
        ("checksum", C.c_uint64),
    ]


class BenchStats(C.Structure):
    _fields_ = [
        ("trials", C.c_uint32),
        ("mean_s", C.c_double), ("std_s", C.c_double), ("min_s", C.c_double), ("max_s", C.c_double),
        ("median_s", C.c_double), ("p20_s", C.c_double), ("p80_s", C.c_double),
    ]


class Reply(C.Structure):
    _fields_ = [
        ("magic", C.c_uint32), ("st", C.c_int32), ("code", C.c_int64),
        ("calls_done", C.c_uint64), ("workspace_bytes", C.c_uint64),
        ("device_seconds", C.c_double),
        ("graph_used", C.c_uint32), ("graph_nodes", C.c_uint32), ("graph_captured", C.c_uint32),
        ("input_differences", C.c_uint64),
        ("outputs", OutputStats * MAX_COMPARED),
        ("bench", BenchStats),
        ("ipc_handle", C.c_uint8 * 64),
        ("message", C.c_char * MESSAGE_BYTES),
    ]


def layout():
    """Sizes and offsets the C++ side compares with offsetof (python_kernel_test)."""
    out = {"command": C.sizeof(Command), "reply": C.sizeof(Reply), "tensor_desc": C.sizeof(TensorDesc)}
    for name in ("kind", "num_slots", "slot_stride", "table_offset", "table_entries", "tensors",
                 "scalars", "first_slot", "rotate", "window", "calls", "graph", "protocol", "rep_ms"):
        out["command." + name] = getattr(Command, name).offset
    for name in ("shape", "offset", "bytes", "dist_kind", "slack"):
        out["tensor_desc." + name] = getattr(TensorDesc, name).offset
    for name in ("st", "code", "calls_done", "workspace_bytes", "device_seconds", "graph_used",
                 "graph_nodes", "graph_captured", "outputs", "bench", "message"):
        out["reply." + name] = getattr(Reply, name).offset
    return out


if __name__ == "__main__":
    import json
    print(json.dumps(layout()))
