# expect: load_error
def run(inputs, outputs, scalars):
    pass
