// What a process of a many-GPU job reports (tracer/process_identity.h): its rank from the
// launcher's variables, its section, its GPU's UUID in NVML's form and its protocol lines.
#include "tracer/process_identity.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace emo::tracer {
namespace {

/// A getenv over a map.
auto env_of(const std::map<std::string, std::string>& m) {
  return [m](const char* name) -> const char* {
    const auto it = m.find(name);
    return it == m.end() ? nullptr : it->second.c_str();
  };
}

TEST(RankFromEnvironment, EachLauncher) {
  EXPECT_EQ(rank_from_environment(env_of({{"RANK", "5"}, {"LOCAL_RANK", "1"}})).rank, 5);  // torchrun
  EXPECT_EQ(rank_from_environment(env_of({{"RANK", "5"}, {"LOCAL_RANK", "1"}})).local_rank, 1);
  const auto ompi = rank_from_environment(env_of({{"OMPI_COMM_WORLD_RANK", "12"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "4"}}));
  EXPECT_EQ(ompi.rank, 12);
  EXPECT_EQ(ompi.local_rank, 4);
  const auto slurm = rank_from_environment(env_of({{"SLURM_PROCID", "9"}, {"SLURM_LOCALID", "1"}}));
  EXPECT_EQ(slurm.rank, 9);
  EXPECT_EQ(slurm.local_rank, 1);
  // torchrun under srun: RANK (the job's) wins over SLURM_PROCID (the srun task's).
  EXPECT_EQ(rank_from_environment(env_of({{"RANK", "3"}, {"SLURM_PROCID", "0"}})).rank, 3);
  // Not an integer: skipped, the next variable read.
  EXPECT_EQ(rank_from_environment(env_of({{"RANK", "x"}, {"PMI_RANK", "2"}})).rank, 2);
  EXPECT_EQ(rank_from_environment(env_of({{"RANK", "-1"}})).rank, -1);
  const auto none = rank_from_environment(env_of({}));
  EXPECT_EQ(none.rank, -1);
  EXPECT_EQ(none.local_rank, -1);
}

TEST(UuidText, AsNvmlPrintsIt) {
  const std::array<std::uint8_t, 16> b = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
                                          0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};
  EXPECT_EQ(uuid_text(b), "GPU-00112233-4455-6677-8899-aabbccddeeff");
}

TEST(SectionFor, ByRankInAJobElseByDevice) {
  WatchList job;
  job.sections = {{0, 4}, {1, 5}, {2, 6}, {3, 7}};  // the second node of an 8-rank job
  EXPECT_EQ(section_for(job, 6, 0), 2);   // rank 6 on its CUDA device 0 follows section 2
  EXPECT_EQ(section_for(job, 6, 3), 2);   // whatever its device
  EXPECT_EQ(section_for(job, 1, 0), std::nullopt);   // rank of another node
  EXPECT_EQ(section_for(job, -1, 0), std::nullopt);  // no rank in the environment
  WatchList one;
  one.sections = {{0, -1}, {1, -1}};
  EXPECT_EQ(section_for(one, 3, 1), 1);   // by CUDA device
  EXPECT_EQ(section_for(WatchList{}, -1, 2), 2);  // a list written before sections existed
}

TEST(ProtocolLines, HelloAndProgress) {
  EXPECT_EQ(hello_line(4242, 3, 1, "GPU-ab"), "H 4242 3 1 GPU-ab\n");
  EXPECT_EQ(hello_line(7, -1, 0, ""), "H 7 -1 0 -\n");
  EXPECT_EQ(progress_line({2, 1, 9}, 123456789, 4242), "P 2 1 9 123456789 4242\n");
}

TEST(WatchListSections, RoundTripThroughText) {
  WatchList w;
  w.marker = "step*";
  w.sections = {{0, 4}, {1, -1}};
  w.entries.push_back({1, 0, 7, 2, "gemm kernel"});
  const std::string text = to_text(w);
  EXPECT_NE(text.find("gpu 0 4\ngpu 1 -1\n"), std::string::npos) << text;
  const auto back = parse_watch_list(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->sections, w.sections);
  ASSERT_EQ(back->entries.size(), 1u);
  EXPECT_EQ(back->entries[0].name, "gemm kernel");
  EXPECT_FALSE(parse_watch_list("emo.watch/1\ngpu 0\n"));
  EXPECT_FALSE(parse_watch_list("emo.watch/1\ngpu 0 x\n"));
}

}  // namespace
}  // namespace emo::tracer
