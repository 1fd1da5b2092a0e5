# expect: forbidden
# A file that does not parse is refused by the source screen (lathe_screen.py), with its line,
# before the build's own syntax check would see it.
def launch(inputs, outputs, scalars)
    pass
