#include <catch2/catch.hpp>

#include "core/args.hpp"
#include "core/error.hpp"

using namespace dtsim;
using V = std::vector<int64_t>;

TEST_CASE("integer lists, ranges and sizes") {
  CHECK(parse_int_list("--gpus", "1,2,4", 1, 100) == V{1, 2, 4});
  CHECK(parse_int_list("--gpus", "3..6", 1, 100) == V{3, 4, 5, 6});
  CHECK(parse_int_list("--gpus", "1..64:x2", 1, 100) == V{1, 2, 4, 8, 16, 32, 64});
  CHECK(parse_int_list("--gpus", "1..100:x4", 1, 100) == V{1, 4, 16, 64});
  CHECK(parse_int_list("--gpus", "8..40:+8", 1, 100) == V{8, 16, 24, 32, 40});
  CHECK(parse_int_list("--gpus", "3..12:+4", 1, 100) == V{3, 7, 11});
  CHECK(parse_int_list("--gpus", "5..5:+3", 1, 100) == V{5});
  CHECK(parse_int_list("--bytes", "4,1K,1M,1G", 0, int64_t(1) << 40) == V{4, 1024, 1 << 20, 1 << 30});
  CHECK(parse_int_list("--bytes", "0", 0, 10) == V{0});
}

TEST_CASE("bad lists name the flag") {
  for (const char* bad : {"", "1,,2", "x", "4..2", "0", "101", "1..8:2", "1..8:x1", "1..8:+0", "1..8:+", "1..8:-2", "5Q", "-3", "99999999999999999999"}) {
    INFO(bad);
    CHECK_THROWS_WITH(parse_int_list("--gpus", bad, 1, 100), Catch::Matchers::StartsWith("--gpus: "));
  }
  CHECK_THROWS_AS(parse_int_list("--gpus", "1..1000000", 1, 10000000), InputError);
  CHECK_THROWS_AS(parse_int_list("--gpus", "1..9000000:+2", 1, 10000000), InputError);
  CHECK(parse_int_list("--gpus", "1..9000000:+1000", 1, 10000000).size() == 9000);
}
