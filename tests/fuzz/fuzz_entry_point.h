// The libFuzzer entry point, declared once for the fuzz targets and for the standalone driver that
// replaces libFuzzer in builds without it.
#pragma once

#include <cstddef>
#include <cstdint>

// Runs one input through the target. Returns 0 (libFuzzer reserves other values); a violated
// property aborts the process. Called from one thread at a time; `data` stays owned by the caller
// and holds exactly `size` readable bytes.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
