// The scalars in one TensorBoard event (the data of one TFRecord of an event file).
//
// Two forms are read:
//   - `Summary.Value.simple_value`, a float: TensorFlow 1, tensorboardX, PyTorch's SummaryWriter;
//   - `Summary.Value.tensor`, a 0-d tensor of float, double, int32 or int64, with no plugin or
//     the "scalars" plugin: TensorFlow 2's tf.summary.scalar. Its value is in tensor_content
//     (little-endian) or in float_val / double_val / int_val / int64_val.
// Everything else is skipped without a word: the file_version record, histograms, images,
// audio, text, graphs, hparams, tensors that are not 0-d, values with no tag.
#pragma once

#include <string_view>
#include <vector>

#include "common/status.h"
#include "metrics/metric_point.h"

namespace cohort::metrics {

// The scalar points of the event encoded in `record`, each with `run`, the event's step and wall
// time. InvalidArgument when the record is not an Event, or holds a 0-d tensor with more than
// one value or content of the wrong size (nothing of that event is kept).
StatusOr<std::vector<MetricPoint>> DecodeEventScalars(std::string_view record,
                                                      std::string_view run);

}  // namespace cohort::metrics
