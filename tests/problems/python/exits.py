# expect: crash
import os


def launch(inputs, outputs, scalars):
    os._exit(0)
