#include "metrics/masked_crc32c.h"

#include <boost/crc.hpp>

namespace cohort::metrics {

uint32_t MaskedCrc32c(std::string_view bytes) {
  // CRC-32C: polynomial 0x1EDC6F41, reflected, initial and final XOR 0xFFFFFFFF.
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(bytes.data(), bytes.size());
  uint32_t c = crc.checksum();
  constexpr uint32_t kMaskDelta = 0xa282ead8;
  return ((c >> 15) | (c << 17)) + kMaskDelta;
}

}  // namespace cohort::metrics
