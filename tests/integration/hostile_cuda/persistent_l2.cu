// expect: forbidden
// Pins its inputs in L2 with an access-policy window: a persistent-L2 trick (PROTOCOL.md).
#include <lathe/abi.h>
extern "C" int lathe_launch(const lathe_args* args) {
  cudaStreamAttrValue v = {};
  v.accessPolicyWindow.base_ptr = const_cast<void*>(args->inputs[0].data);
  v.accessPolicyWindow.num_bytes = 1 << 20;
  v.accessPolicyWindow.hitRatio = 1.0f;
  v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  cudaStreamSetAttribute(static_cast<cudaStream_t>(args->stream), cudaStreamAttributeAccessPolicyWindow, &v);
  return 0;
}
