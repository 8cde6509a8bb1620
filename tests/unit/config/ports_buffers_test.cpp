// ports[].frame_buffers, ports[].tso and ports[].l4_checksums: defaults, every spelling, and
// errors that name the key and the allowed values. (l4_checksums: off on a driver other
// than net_memif is refused at start, when the driver is known: test_memif_l4_checksums.py.)
#include <gtest/gtest.h>

#include "tests/unit/config/helpers.hpp"

namespace ws::config::test {
namespace {

TEST(PortBuffers, DefaultsAreAuto) {
  LoadResult r = load(kBase);
  ASSERT_TRUE(r.config) << all_errors(r);
  EXPECT_EQ(r.config->ports[0].frame_buffers, FrameBuffers::automatic);
  EXPECT_EQ(r.config->ports[0].tso, Tso::automatic);
  EXPECT_EQ(r.config->ports[0].l4_checksums, L4Checksums::on);
}

TEST(PortBuffers, EverySpelling) {
  const std::pair<const char*, FrameBuffers> fb[] = {{"auto", FrameBuffers::automatic},
                                                     {"whole", FrameBuffers::whole},
                                                     {"chained", FrameBuffers::chained}};
  for (const auto& [text, value] : fb) {
    LoadResult r = load(with(std::string("    frame_buffers: ") + text + "\n"));
    ASSERT_TRUE(r.config) << text << all_errors(r);
    EXPECT_EQ(r.config->ports[0].frame_buffers, value);
    EXPECT_EQ(to_string(value), text);
  }
  for (const auto& [text, value] :
       {std::pair{"auto", Tso::automatic}, std::pair{"off", Tso::off}}) {
    LoadResult r = load(with(std::string("    tso: ") + text + "\n"));
    ASSERT_TRUE(r.config) << text << all_errors(r);
    EXPECT_EQ(r.config->ports[0].tso, value);
    EXPECT_EQ(to_string(value), text);
  }
  for (const auto& [text, value] :
       {std::pair{"on", L4Checksums::on}, std::pair{"off", L4Checksums::off}}) {
    LoadResult r = load(with(std::string("    l4_checksums: ") + text + "\n"));
    ASSERT_TRUE(r.config) << text << all_errors(r);
    EXPECT_EQ(r.config->ports[0].l4_checksums, value);
    EXPECT_EQ(to_string(value), text);
  }
}

TEST(PortBuffers, BadValuesNameTheKeyAndTheChoices) {
  EXPECT_TRUE(one_error(with("    frame_buffers: scattered\n"), 6, 20,
                        {"ports[0].frame_buffers", "'scattered'", "auto, whole, chained"}));
  EXPECT_TRUE(one_error(with("    tso: on\n"), 6, 10, {"ports[0].tso", "auto, off"}));
  EXPECT_TRUE(one_error(with("    tso: 1\n"), 6, 10, {"ports[0].tso"}));
  EXPECT_TRUE(one_error(with("    l4_checksums: false\n"), 6, 19,
                        {"ports[0].l4_checksums", "'false'", "on, off"}));
}

TEST(PortBuffers, DescribedWhenNotAuto) {
  LoadResult r = load(with("    frame_buffers: chained\n    tso: off\n    l4_checksums: off\n"));
  ASSERT_TRUE(r.config) << all_errors(r);
  std::string d = describe(*r.config);
  EXPECT_NE(d.find("chained frame buffers"), std::string::npos) << d;
  EXPECT_NE(d.find("tso off"), std::string::npos) << d;
  EXPECT_NE(d.find("l4_checksums off"), std::string::npos) << d;
}

}  // namespace
}  // namespace ws::config::test
