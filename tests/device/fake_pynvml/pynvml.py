"""A stand-in for nvidia-ml-py's pynvml with the read-only calls scripts/device/ uses, for tests
without a GPU: a simulated energy counter that steps every 20 ms at 75 W, a power reading that
updates every 100 ms, an H200-like clock table. It has no setter at all: a script that tried to
change a setting would fail with AttributeError."""
import time

NVML_CLOCK_GRAPHICS, NVML_CLOCK_SM, NVML_CLOCK_MEM = 0, 1, 2
NVML_TEMPERATURE_GPU = 0
_T0 = time.monotonic()


class _Mem:
    total = 150_000_000_000


def nvmlInit(): pass
def nvmlDeviceGetHandleByIndex(i): return ("gpu", i)
def nvmlDeviceGetName(h): return "NVIDIA H200"
def nvmlSystemGetDriverVersion(): return "580.00.00"
def nvmlSystemGetNVMLVersion(): return "13.580.00"
def nvmlSystemGetCudaDriverVersion(): return 13000
def nvmlDeviceGetMemoryInfo(h): return _Mem()
def nvmlDeviceGetSupportedMemoryClocks(h): return [3201]
def nvmlDeviceGetSupportedGraphicsClocks(h, mem): return list(range(1980, 344, -15))
def nvmlDeviceGetMaxClockInfo(h, c): return 3201 if c == NVML_CLOCK_MEM else 1980
def nvmlDeviceGetDefaultApplicationsClock(h, c): return 3201 if c == NVML_CLOCK_MEM else 1980
def nvmlDeviceGetApplicationsClock(h, c): return 3201 if c == NVML_CLOCK_MEM else 1980
def nvmlDeviceGetClockInfo(h, c): return 3201 if c == NVML_CLOCK_MEM else 345
def nvmlDeviceGetPowerManagementLimitConstraints(h): return [200000, 700000]
def nvmlDeviceGetPowerManagementDefaultLimit(h): return 700000
def nvmlDeviceGetPowerManagementLimit(h): return 700000
def nvmlDeviceGetEnforcedPowerLimit(h): return 700000
def nvmlDeviceGetPersistenceMode(h): return 1
def nvmlDeviceGetComputeMode(h): return 0
def nvmlDeviceGetPerformanceState(h): return 0
def nvmlDeviceGetTemperature(h, s): return 30
def nvmlDeviceGetSupportedClocksEventReasons(h): return 0x1FF
def nvmlDeviceGetCurrentClocksEventReasons(h): return 1


def nvmlDeviceGetTotalEnergyConsumption(h):
    t = time.monotonic() - _T0
    return int(int(t / 0.020) * 0.020 * 75.0 * 1000)  # mJ, steps every 20 ms


def nvmlDeviceGetPowerUsage(h):
    t = time.monotonic() - _T0
    return 75000 + (int(t / 0.100) % 3) * 100  # mW, a new reading every 100 ms
