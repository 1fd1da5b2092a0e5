# expect: forbidden
# The network is closed to a kernel: the seccomp filter kills the worker at socket().
import socket


def launch(inputs, outputs, scalars):
    socket.socket(socket.AF_INET, socket.SOCK_STREAM)
