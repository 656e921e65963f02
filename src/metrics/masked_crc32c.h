// The checksum of TFRecord framing: CRC32C (Castagnoli), masked so that the CRC of data that
// itself holds CRCs is not trivially related to them (TensorFlow's crc32c::Mask).
#pragma once

#include <cstdint>
#include <string_view>

namespace cohort::metrics {

uint32_t MaskedCrc32c(std::string_view bytes);

}  // namespace cohort::metrics
