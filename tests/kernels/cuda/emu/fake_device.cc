// The emulated "device" (run.sh): a recorded card's description, chosen at compile time with
// -DG4_EMU_CARD=TeslaT4 / NvidiaL4 / A100_40GB / H200 (default H200), so the kernels' plans and
// tile choices are those of that card.
#include "kernels/cuda/device.h"
#include "kernels/cuda/recorded_devices.h"

#ifndef G4_EMU_CARD
#define G4_EMU_CARD H200
#endif

namespace g4::cuda {
int DeviceCount() { return 1; }
StatusOr<DeviceInfo> QueryDevice(int) { return testing::G4_EMU_CARD(); }
}  // namespace g4::cuda
