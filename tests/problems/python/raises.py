# expect: launch_error
def launch(inputs, outputs, scalars):
    raise ValueError("this kernel refuses its inputs")
