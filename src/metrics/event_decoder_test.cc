#include "metrics/event_decoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "metrics/event_test_writer.h"
#include "metrics/tensorboard_event.pb.h"

namespace cohort::metrics {
namespace {

namespace tb = cohort::metrics::tensorboard;
using testing::HistogramEvent;
using testing::SimpleValueEvent;
using testing::TensorScalarEvent;

MetricPoint One(const std::string& record) {
  auto points = DecodeEventScalars(record, "run");
  EXPECT_TRUE(points.ok()) << points.status().ToString();
  if (!points.ok() || points->size() != 1) {
    ADD_FAILURE() << "wanted one point";
    return {};
  }
  return (*points)[0];
}

TEST(EventDecoder, ReadsASimpleValue) {
  EXPECT_EQ(One(SimpleValueEvent(7, 1700000000.5, "loss", 0.25f)),
            (MetricPoint{"run", "loss", 7, 1700000000.5, 0.25}));
}

TEST(EventDecoder, ReadsASimpleValueOfZero) {
  EXPECT_EQ(One(SimpleValueEvent(0, 1, "loss", 0.0f)).value, 0.0);
}

TEST(EventDecoder, ReadsTensorScalarsOfEveryType) {
  for (bool in_content : {true, false}) {
    SCOPED_TRACE(in_content ? "tensor_content" : "typed field");
    EXPECT_EQ(One(TensorScalarEvent(3, 2, "f", 1.5, tb::DT_FLOAT, in_content)).value, 1.5);
    EXPECT_EQ(One(TensorScalarEvent(3, 2, "d", 0.1, tb::DT_DOUBLE, in_content)).value, 0.1);
    EXPECT_EQ(One(TensorScalarEvent(3, 2, "i", -42, tb::DT_INT32, in_content)).value, -42);
    EXPECT_EQ(One(TensorScalarEvent(3, 2, "l", 1e15, tb::DT_INT64, in_content)).value, 1e15);
  }
  MetricPoint p = One(TensorScalarEvent(3, 2, "acc", 0.75, tb::DT_FLOAT, true));
  EXPECT_EQ(p, (MetricPoint{"run", "acc", 3, 2, 0.75}));
}

TEST(EventDecoder, KeepsNonFiniteValues) {
  EXPECT_TRUE(std::isnan(One(SimpleValueEvent(1, 1, "loss", NAN)).value));
  EXPECT_EQ(One(SimpleValueEvent(1, 1, "loss", INFINITY)).value,
            std::numeric_limits<double>::infinity());
}

TEST(EventDecoder, ReadsEveryValueOfASummary) {
  tb::Event event;
  event.set_step(4);
  event.set_wall_time(9);
  for (const char* tag : {"a", "b"}) {
    auto* v = event.mutable_summary()->add_value();
    v->set_tag(tag);
    v->set_simple_value(2);
  }
  auto points = DecodeEventScalars(event.SerializeAsString(), "");
  ASSERT_TRUE(points.ok());
  ASSERT_EQ(points->size(), 2u);
  EXPECT_EQ((*points)[1], (MetricPoint{"", "b", 4, 9, 2}));
}

TEST(EventDecoder, SkipsWhatIsNotAScalar) {
  auto none = [](const std::string& record) {
    auto points = DecodeEventScalars(record, "");
    ASSERT_TRUE(points.ok()) << points.status().ToString();
    EXPECT_TRUE(points->empty());
  };
  none(testing::FileVersionEvent(1));
  none(HistogramEvent(1, 1, "weights"));
  none(SimpleValueEvent(1, 1, "", 1));  // no tag

  tb::Event text;  // a string tensor: the text plugin
  auto* v = text.mutable_summary()->add_value();
  v->set_tag("notes");
  v->mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
  v->mutable_tensor()->set_dtype(static_cast<tb::DataType>(7));  // DT_STRING
  none(text.SerializeAsString());

  tb::Event scalar;  // a 0-d float that some other plugin owns
  ASSERT_TRUE(scalar.ParseFromString(TensorScalarEvent(1, 1, "x", 1, tb::DT_FLOAT, true)));
  scalar.mutable_summary()
      ->mutable_value(0)
      ->mutable_metadata()
      ->mutable_plugin_data()
      ->set_plugin_name("pr_curves");
  none(scalar.SerializeAsString());

  tb::Event image;  // an image: a value with neither simple_value nor tensor that we read
  auto* img = image.mutable_summary()->add_value();
  img->set_tag("sample");
  none(image.SerializeAsString());
}

TEST(EventDecoder, AcceptsAScalarTensorWithNoPlugin) {
  tb::Event event;
  ASSERT_TRUE(event.ParseFromString(TensorScalarEvent(1, 1, "x", 2, tb::DT_DOUBLE, false)));
  event.mutable_summary()->mutable_value(0)->clear_metadata();
  EXPECT_EQ(One(event.SerializeAsString()).value, 2);
}

TEST(EventDecoder, AnEmptyScalarTensorIsZeroAsTensorFlowReadsIt) {
  tb::Event event;
  ASSERT_TRUE(event.ParseFromString(TensorScalarEvent(1, 1, "x", 2, tb::DT_FLOAT, false)));
  event.mutable_summary()->mutable_value(0)->mutable_tensor()->clear_float_val();
  EXPECT_EQ(One(event.SerializeAsString()).value, 0);
}

TEST(EventDecoder, RejectsAScalarOfTheWrongSize) {
  tb::Event event;
  ASSERT_TRUE(event.ParseFromString(TensorScalarEvent(1, 1, "x", 2, tb::DT_FLOAT, true)));
  event.mutable_summary()->mutable_value(0)->mutable_tensor()->set_tensor_content("abc");
  auto points = DecodeEventScalars(event.SerializeAsString(), "");
  ASSERT_FALSE(points.ok());
  EXPECT_NE(points.status().message().find("tag x"), std::string::npos);

  tb::Event two;
  ASSERT_TRUE(two.ParseFromString(TensorScalarEvent(1, 1, "y", 2, tb::DT_FLOAT, false)));
  two.mutable_summary()->mutable_value(0)->mutable_tensor()->add_float_val(3);
  EXPECT_FALSE(DecodeEventScalars(two.SerializeAsString(), "").ok());
}

TEST(EventDecoder, RejectsWhatIsNotAnEvent) {
  EXPECT_FALSE(DecodeEventScalars("\xff\xff\xff garbage", "").ok());
}

TEST(EventDecoder, MakesTagsValidUtf8) {
  EXPECT_EQ(One(SimpleValueEvent(1, 1, "loss\xff", 1)).tag, "loss\xEF\xBF\xBD");
}

}  // namespace
}  // namespace cohort::metrics
