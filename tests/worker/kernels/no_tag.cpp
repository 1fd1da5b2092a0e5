// Does not include lathe/abi.h: no ABI tag.
extern "C" int lathe_launch(void*) {
  return 0;
}
