// What the metrics tests write: events made with the generated protobuf classes, framed as a
// TFRecord writer frames them, into files under a temporary directory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace cohort::metrics::testing {

// Serialized Event protobufs (the data of one record each).
std::string FileVersionEvent(double wall_time);
std::string SimpleValueEvent(int64_t step, double wall_time, std::string_view tag, float value);
// A TensorFlow 2 scalar: a 0-d tensor, "scalars" plugin. dtype is a tensorboard::DataType value;
// in_content: the value in tensor_content (as TensorFlow writes it) rather than the typed field.
std::string TensorScalarEvent(int64_t step, double wall_time, std::string_view tag, double value,
                              int dtype, bool in_content);
// A histogram-like value: a 1-d float tensor with the "histograms" plugin.
std::string HistogramEvent(int64_t step, double wall_time, std::string_view tag);

// A record header claiming `length`, with the checksum that makes it believed.
std::string RecordHeader(uint64_t length);
// FrameTfRecord of each event, concatenated.
std::string Framed(std::initializer_list<std::string> events);

// The real TensorFlow 2 event file in ../shared/fixtures/tfevents (100 points of "my_metric").
std::filesystem::path SharedTf2Fixture();
std::string ReadWholeFile(const std::filesystem::path& path);
void WriteWholeFile(const std::filesystem::path& path, std::string_view bytes);
void AppendToFile(const std::filesystem::path& path, std::string_view bytes);

// A fresh directory, removed with everything in it when this goes.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace cohort::metrics::testing
