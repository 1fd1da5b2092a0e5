# expect: launch_error
# Landlock: outside the system's trees nothing is readable (the workspace, the task, /tmp, /root).
import os


def launch(inputs, outputs, scalars):
    os.listdir("/tmp")
