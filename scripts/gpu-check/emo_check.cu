// A small CUDA program for scripts/gpu-check.sh: `steps` iterations, each an NVTX range
// "step#N" holding a compute-bound kernel on stream A, an event recorded after it, a
// memory-bound kernel on stream B that waits for the event, a device-to-host copy and a stream
// synchronize. Nothing here changes GPU settings.
//   nvcc -O2 -o emo_check emo_check.cu        ./emo_check [steps]
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define CHECK(call)                                                                      \
  do {                                                                                   \
    cudaError_t err_ = (call);                                                           \
    if (err_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "emo_check: %s: %s\n", #call, cudaGetErrorString(err_));      \
      return 1;                                                                          \
    }                                                                                    \
  } while (0)

__global__ void emo_check_compute(float* x, int n, int rounds) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int r = 0; r < rounds; ++r) v = v * 1.000001f + 0.5f;
  x[i] = v;
}

__global__ void emo_check_memory(float* y, const float* x, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = 2.0f * x[i];
}

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 20;
  const int n = 1 << 24;
  float *x = nullptr, *y = nullptr, *host = nullptr;
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  CHECK(cudaMalloc(&y, n * sizeof(float)));
  CHECK(cudaMallocHost(&host, 1024 * sizeof(float)));
  CHECK(cudaMemset(x, 0, n * sizeof(float)));
  cudaStream_t a, b;
  cudaEvent_t done;
  CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  for (int s = 0; s < steps; ++s) {
    char name[32];
    std::snprintf(name, sizeof name, "step#%d", s);
    nvtxRangePushA(name);
    emo_check_compute<<<(n + 255) / 256, 256, 0, a>>>(x, n, 2000);
    CHECK(cudaEventRecord(done, a));
    CHECK(cudaStreamWaitEvent(b, done, 0));
    emo_check_memory<<<1024, 256, 0, b>>>(y, x, n);
    CHECK(cudaMemcpyAsync(host, y, 1024 * sizeof(float), cudaMemcpyDeviceToHost, b));
    CHECK(cudaStreamSynchronize(b));
    nvtxRangePop();
  }
  CHECK(cudaDeviceSynchronize());
  std::printf("emo_check: %d steps, y[0] = %g\n", steps, host[0]);
  return 0;
}
