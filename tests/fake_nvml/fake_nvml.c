/* A stand-in for the NVIDIA driver's libnvidia-ml.so.1, so that the agent's NVML probe can be
 * tested on machines without GPUs. It exports only the NVML entry points the probe uses, with
 * NVML's ABI, and describes a machine set up through environment variables read at
 * nvmlInit_v2:
 *
 *   FAKE_NVML_GPUS        number of GPUs (default 8, at most FAKE_NVML_MAX_GPUS)
 *   FAKE_NVML_MODEL       device name (default "NVIDIA H100 80GB HBM3")
 *   FAKE_NVML_MEMORY_MIB  memory per GPU in MiB (default 81559)
 *   FAKE_NVML_FAIL_INIT   "1": nvmlInit_v2 fails with NVML_ERROR_DRIVER_NOT_LOADED
 *   FAKE_NVML_UTILIZATION_FILE
 *                         a file of lines "INDEX UTIL_PERCENT MEM_USED_BYTES" (the last field
 *                         optional, 0 when left out), read again at every
 *                         nvmlDeviceGetUtilizationRates and nvmlDeviceGetMemoryInfo, so that a
 *                         test can change a GPU's load while an agent runs. A GPU without a line
 *                         (or without the file) is idle: 0% and no memory used. A line with
 *                         UTIL_PERCENT "fail" makes nvmlDeviceGetUtilizationRates fail for it.
 *
 * Built with FAKE_NVML_WITHOUT_UTILIZATION defined (the fake_nvml_no_utilization target), the
 * library lacks nvmlDeviceGetUtilizationRates, as drivers older than the agent might.
 *
 * Topology: GPUs come in NVLink pairs (0-1, 2-3, ...) joined by two active links, and have two
 * more links to the same peer that are down (inactive, yet still naming the peer as their far
 * end, so a probe that forgets to check the state counts them). The first half of the GPUs shares
 * one PCIe switch and NUMA node 0, the second half another switch and NUMA node 1; across halves
 * the common ancestor is the system.
 *
 * Like NVML, initialisation is reference counted and every device call fails with
 * NVML_ERROR_UNINITIALIZED while the count is zero, which lets tests check that the probe
 * shuts NVML down. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_NVML_EXPORT __attribute__((visibility("default")))

typedef int nvmlReturn_t;
typedef int nvmlGpuTopologyLevel_t;
typedef int nvmlEnableState_t;

enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_UNKNOWN = 999,
};

enum {
  NVML_FEATURE_DISABLED = 0,
  NVML_FEATURE_ENABLED = 1,
};

enum {
  NVML_TOPOLOGY_INTERNAL = 0,
  NVML_TOPOLOGY_SINGLE = 10,
  NVML_TOPOLOGY_MULTIPLE = 20,
  NVML_TOPOLOGY_HOSTBRIDGE = 30,
  NVML_TOPOLOGY_NODE = 40,
  NVML_TOPOLOGY_SYSTEM = 50,
};

typedef struct {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef struct {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

typedef struct {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;

enum {
  FAKE_NVML_MAX_GPUS = 64,
  FAKE_NVML_NVLINKS_PER_PEER = 2,
  /* Links 0..FAKE_NVML_LINKS-1 exist; beyond the active ones they are inactive. */
  FAKE_NVML_LINKS = 4,
};

struct nvmlDevice_st {
  unsigned int index;
};
typedef struct nvmlDevice_st* nvmlDevice_t;

static struct nvmlDevice_st devices[FAKE_NVML_MAX_GPUS];
static unsigned int init_count;
static unsigned int gpu_count;
/* Room for names longer than the 96 bytes NVML callers pass, so tests can make
 * nvmlDeviceGetName fail. */
static char model[256];
static unsigned long long memory_mib;

static const char* env_or(const char* name, const char* fallback) {
  const char* value = getenv(name);
  return value != NULL && value[0] != '\0' ? value : fallback;
}

/* Returns 0 and stores the number if `text` is a whole decimal number no larger than `max`. */
static int parse_number(const char* text, unsigned long long max, unsigned long long* out) {
  char* end = NULL;
  errno = 0;
  if (text[0] == '-') return -1;
  unsigned long long value = strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value > max) return -1;
  *out = value;
  return 0;
}

static nvmlReturn_t configure(void) {
  if (strcmp(env_or("FAKE_NVML_FAIL_INIT", "0"), "1") == 0) return NVML_ERROR_DRIVER_NOT_LOADED;
  unsigned long long gpus = 0;
  if (parse_number(env_or("FAKE_NVML_GPUS", "8"), FAKE_NVML_MAX_GPUS, &gpus) != 0) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  unsigned long long mib = 0;
  if (parse_number(env_or("FAKE_NVML_MEMORY_MIB", "81559"), 1ULL << 40, &mib) != 0) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  gpu_count = (unsigned int)gpus;
  memory_mib = mib;
  snprintf(model, sizeof(model), "%s", env_or("FAKE_NVML_MODEL", "NVIDIA H100 80GB HBM3"));
  for (unsigned int i = 0; i < FAKE_NVML_MAX_GPUS; ++i) devices[i].index = i;
  return NVML_SUCCESS;
}

/* NVML_SUCCESS if NVML is initialised and `device` is one of the configured GPUs. */
static nvmlReturn_t check_device(nvmlDevice_t device) {
  if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (device < devices || device >= devices + gpu_count) return NVML_ERROR_INVALID_ARGUMENT;
  return NVML_SUCCESS;
}

static int has_peer(unsigned int index) { return (index ^ 1u) < gpu_count; }

/* Half of the machine: 0 or 1. With an odd count the first half is the larger. */
static unsigned int half_of(unsigned int index) { return index < (gpu_count + 1) / 2 ? 0 : 1; }

static nvmlReturn_t copy_string(const char* value, char* buffer, unsigned int length) {
  if (buffer == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (strlen(value) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(buffer, value, strlen(value) + 1);
  return NVML_SUCCESS;
}

static void fill_pci(unsigned int index, nvmlPciInfo_t* pci) {
  memset(pci, 0, sizeof(*pci));
  pci->domain = 0;
  pci->bus = 0x10 + index;
  pci->device = 0;
  pci->pciDeviceId = 0x233010DE; /* H100 SXM5 */
  pci->pciSubSystemId = 0x16C110DE;
  snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04X:%02X:%02X.0", pci->domain, pci->bus,
           pci->device);
  snprintf(pci->busId, sizeof(pci->busId), "%08X:%02X:%02X.0", pci->domain, pci->bus, pci->device);
}

/* What the utilisation file says of one GPU. */
struct load {
  int utilization_fails;
  unsigned int utilization;
  unsigned long long memory_used;
};

/* Reads the GPU's line of FAKE_NVML_UTILIZATION_FILE, if there is one; idle otherwise. */
static struct load load_of(unsigned int index) {
  struct load load = {0, 0, 0};
  const char* path = getenv("FAKE_NVML_UTILIZATION_FILE");
  if (path == NULL || path[0] == '\0') return load;
  FILE* file = fopen(path, "r");
  if (file == NULL) return load;
  char line[256];
  while (fgets(line, sizeof(line), file) != NULL) {
    unsigned int line_index = 0;
    char utilization[32] = "";
    unsigned long long used = 0;
    int fields = sscanf(line, "%u %31s %llu", &line_index, utilization, &used);
    if (fields < 2 || line_index != index) continue;
    unsigned long long percent = 0;
    load.utilization_fails = strcmp(utilization, "fail") == 0;
    if (!load.utilization_fails && parse_number(utilization, 100, &percent) == 0) {
      load.utilization = (unsigned int)percent;
    }
    load.memory_used = fields == 3 ? used : 0;
  }
  fclose(file);
  return load;
}

FAKE_NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    default:
      return "Unknown Error";
  }
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlInit_v2(void) {
  if (init_count == 0) {
    nvmlReturn_t result = configure();
    if (result != NVML_SUCCESS) return result;
  }
  ++init_count;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlShutdown(void) {
  if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
  --init_count;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *count = gpu_count;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                            nvmlDevice_t* device) {
  if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (index >= gpu_count || device == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &devices[index];
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name,
                                                unsigned int length) {
  nvmlReturn_t result = check_device(device);
  return result != NVML_SUCCESS ? result : copy_string(model, name, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid,
                                                unsigned int length) {
  nvmlReturn_t result = check_device(device);
  if (result != NVML_SUCCESS) return result;
  char value[96];
  snprintf(value, sizeof(value), "GPU-fake0000-0000-0000-0000-%012u", device->index);
  return copy_string(value, uuid, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  nvmlReturn_t result = check_device(device);
  if (result != NVML_SUCCESS) return result;
  if (memory == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  struct load load = load_of(device->index);
  memory->total = memory_mib * 1024ULL * 1024ULL;
  memory->used = load.memory_used;
  memory->free = memory->used <= memory->total ? memory->total - memory->used : 0;
  return NVML_SUCCESS;
}

#ifndef FAKE_NVML_WITHOUT_UTILIZATION
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                            nvmlUtilization_t* utilization) {
  nvmlReturn_t result = check_device(device);
  if (result != NVML_SUCCESS) return result;
  if (utilization == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  struct load load = load_of(device->index);
  if (load.utilization_fails) return NVML_ERROR_UNKNOWN;
  utilization->gpu = load.utilization;
  utilization->memory = 0;
  return NVML_SUCCESS;
}
#endif

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  nvmlReturn_t result = check_device(device);
  if (result != NVML_SUCCESS) return result;
  if (pci == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  fill_pci(device->index, pci);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int* node) {
  nvmlReturn_t result = check_device(device);
  if (result != NVML_SUCCESS) return result;
  if (node == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *node = half_of(device->index);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1,
                                                                  nvmlDevice_t device2,
                                                                  nvmlGpuTopologyLevel_t* level) {
  nvmlReturn_t result = check_device(device1);
  if (result == NVML_SUCCESS) result = check_device(device2);
  if (result != NVML_SUCCESS) return result;
  if (level == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (device1 == device2) {
    *level = NVML_TOPOLOGY_INTERNAL;
  } else if (half_of(device1->index) == half_of(device2->index)) {
    *level = NVML_TOPOLOGY_MULTIPLE;
  } else {
    *level = NVML_TOPOLOGY_SYSTEM;
  }
  return NVML_SUCCESS;
}

static int link_active(nvmlDevice_t device, unsigned int link) {
  return has_peer(device->index) && link < FAKE_NVML_NVLINKS_PER_PEER;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                                       nvmlEnableState_t* isActive) {
  nvmlReturn_t result = check_device(device);
  if (result != NVML_SUCCESS) return result;
  if (isActive == NULL || link >= FAKE_NVML_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
  *isActive = link_active(device, link) ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device,
                                                                  unsigned int link,
                                                                  nvmlPciInfo_t* pci) {
  nvmlReturn_t result = check_device(device);
  if (result != NVML_SUCCESS) return result;
  if (pci == NULL || link >= FAKE_NVML_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
  if (!has_peer(device->index)) return NVML_ERROR_NOT_SUPPORTED;
  fill_pci(device->index ^ 1u, pci);
  return NVML_SUCCESS;
}
