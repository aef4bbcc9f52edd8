// The clock service's pure parts (runtime/clock_service.h): the emo-clock/1 request parser, who
// may change a GPU's clocks, clamping, leases, the switch interval, the lease record and the
// config file. The service end to end (root service, unprivileged clients) is cli_serve.
#include "runtime/clock_service.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"

namespace emo::runtime {
namespace {

using V = ClockRequest::Verb;

std::string error_of(std::string_view line) {
  std::string error;
  EXPECT_FALSE(parse_clock_request(line, error).has_value()) << line;
  return error;
}

TEST(ClockService, ParsesTheFiveRequests) {
  std::string error;
  auto r = parse_clock_request("set-sm 3 990 1410", error);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->verb, V::kSetSm);
  EXPECT_EQ(r->gpu, 3u);
  EXPECT_EQ(r->min_mhz, 990u);
  EXPECT_EQ(r->max_mhz, 1410u);
  r = parse_clock_request("reset-mem 0", error);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->verb, V::kResetMem);
  EXPECT_EQ(parse_clock_request("reset-sm 7", error)->verb, V::kResetSm);
  EXPECT_EQ(parse_clock_request("set-mem 1 1593 1593", error)->verb, V::kSetMem);
  EXPECT_EQ(parse_clock_request("status", error)->verb, V::kStatus);
}

TEST(ClockService, ParsesAGpuNamedByItsUuid) {
  std::string error;
  auto r = parse_clock_request("set-sm GPU-5a1c0e3b-8f2d-4c6e-9a7b-0d1e2f3a4b5c 990 1410", error);
  ASSERT_TRUE(r) << error;
  EXPECT_EQ(r->gpu_uuid, "GPU-5a1c0e3b-8f2d-4c6e-9a7b-0d1e2f3a4b5c");
  EXPECT_EQ(r->min_mhz, 990u);
  EXPECT_EQ(r->max_mhz, 1410u);
  r = parse_clock_request("reset-mem GPU-fake-0000-0000-0000-000000000002", error);
  ASSERT_TRUE(r) << error;
  EXPECT_EQ(r->verb, V::kResetMem);
  EXPECT_EQ(r->gpu_uuid, "GPU-fake-0000-0000-0000-000000000002");
  EXPECT_EQ(parse_clock_request("reset-sm 1", error)->gpu_uuid, "");  // by index: no UUID
  EXPECT_EQ(error_of("reset-sm GPU-"), "\"GPU-\" is not a number below 1000000");              // nothing after GPU-
  EXPECT_EQ(error_of("reset-sm GPU-a/b"), "\"GPU-a/b\" is not a number below 1000000");        // not a UUID's letter
  EXPECT_EQ(error_of("reset-sm MIG-ab"), "\"MIG-ab\" is not a number below 1000000");          // a MIG instance: no clocks
  EXPECT_NE(error_of("reset-sm GPU-" + std::string(81, 'a')).find("is not a number below"), std::string::npos);  // > 80
  EXPECT_EQ(error_of("set-sm GPU-ab 1410 990"), "MIN 1410 MHz is above MAX 990 MHz");
}

TEST(ClockService, RefusesMalformedRequestsWithAReason) {
  EXPECT_EQ(error_of(""), "unknown request \"\"");
  EXPECT_EQ(error_of("lock 0 990"), "unknown request \"lock\"");
  EXPECT_EQ(error_of("set-sm 0 990"), "set-sm takes 3 argument(s), not 2");
  EXPECT_EQ(error_of("reset-sm"), "reset-sm takes 1 argument(s), not 0");
  EXPECT_EQ(error_of("status now"), "status takes 0 argument(s), not 1");
  EXPECT_EQ(error_of("set-sm 0 -1 990"), "\"-1\" is not a number below 1000000");
  EXPECT_EQ(error_of("set-sm 0 990 1e3"), "\"1e3\" is not a number below 1000000");
  EXPECT_EQ(error_of("set-sm 0 990 1000000"), "\"1000000\" is not a number below 1000000");
  EXPECT_EQ(error_of("set-sm 0 99999999999999999999 1"), "\"99999999999999999999\" is not a number below 1000000");
  EXPECT_EQ(error_of("set-sm 0 1410 990"), "MIN 1410 MHz is above MAX 990 MHz");
  EXPECT_EQ(error_of("reset-sm 0\r"), "a control character in the request");
  EXPECT_EQ(error_of(std::string("reset-sm 0\0", 11)), "a control character in the request");
}

TEST(ClockService, WhoMayChangeAGpu) {
  const ClockCaller user{1000, 1000, 42, false}, root{0, 0, 1, true};
  EXPECT_EQ(permission_refusal(root, 1, GpuUse{{2000}, {2000}}), "");  // root / admin group: any GPU
  EXPECT_EQ(permission_refusal(user, 1, GpuUse{{1000}, {}}), "");    // a process of theirs, none of others
  EXPECT_EQ(permission_refusal(user, 1, GpuUse{{}, {1000}}), "");    // a job file gives it to them
  EXPECT_EQ(permission_refusal(user, 1, GpuUse{{1000, 2000}, {}}), "GPU 1 is used by another user's process");
  EXPECT_EQ(permission_refusal(user, 1, GpuUse{{2000}, {}}), "GPU 1 is used by another user's process");
  EXPECT_EQ(permission_refusal(user, 2, GpuUse{{1000}, {2000}}), "GPU 2 is assigned to another user's job");
  EXPECT_EQ(permission_refusal(user, 2, GpuUse{{2000}, {1000}}), "");  // the job's GPU, whoever else runs there
  EXPECT_EQ(permission_refusal(user, 0, GpuUse{}), "GPU 0 runs no process of uid 1000 and no job file gives it to uid 1000");
}

TEST(ClockService, ClampsToTheFloorAndTheSupportedRange) {
  const std::vector<unsigned> a100 = {1410, 1395, 990, 210};  // any order; only the ends matter
  EXPECT_EQ(clamp_clock_range(990, 990, 0, a100), std::make_pair(990u, 990u));
  EXPECT_EQ(clamp_clock_range(100, 2000, 0, a100), std::make_pair(210u, 1410u));
  EXPECT_EQ(clamp_clock_range(300, 990, 600, a100), std::make_pair(600u, 990u));
  EXPECT_EQ(clamp_clock_range(300, 400, 600, a100), std::make_pair(600u, 600u));
  EXPECT_EQ(clamp_clock_range(300, 400, 5000, a100), std::make_pair(1410u, 1410u));  // floor above the top: the top
}

TEST(ClockService, ALeaseIsOneConnectionsUntilItCloses) {
  LeaseTable t;
  const ClockCaller a{1000, 1000, 11, false}, b{2000, 2000, 22, false};
  EXPECT_EQ(t.take(0, 1, a), "");
  EXPECT_EQ(t.take(0, 1, a), "");  // again: still its own
  EXPECT_EQ(t.take(1, 2, b), "");  // another GPU: served
  EXPECT_EQ(t.take(0, 2, b), "GPU 0 is held by another client (uid 1000, pid 11)");
  t.find(0)->sm = std::make_pair(990u, 990u);
  const auto released = t.release(1);
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0].first, 0u);
  EXPECT_EQ(released[0].second.sm, std::make_pair(990u, 990u));
  EXPECT_EQ(t.find(0), nullptr);
  EXPECT_EQ(t.take(0, 2, b), "");  // free again
  EXPECT_TRUE(t.release(1).empty());
}

TEST(ClockService, TheSwitchIntervalIsPerGpu) {
  LeaseTable t;
  const std::int64_t ms = 1'000'000;
  EXPECT_EQ(t.allow_switch(0, 100 * ms, 5 * ms), "");
  EXPECT_EQ(t.allow_switch(1, 101 * ms, 5 * ms), "");  // another GPU: its own interval
  EXPECT_EQ(t.allow_switch(0, 102 * ms, 5 * ms),
            "GPU 0: a clock switch 2.000 ms after the last one (the service allows one per 5.000 ms)");
  EXPECT_EQ(t.allow_switch(0, 105 * ms, 5 * ms), "");  // 5 ms after the last one let through
  EXPECT_NE(t.allow_switch(0, 109 * ms, 5 * ms), "");  // a refused one does not count
  EXPECT_EQ(t.allow_switch(0, 110 * ms, 5 * ms), "");
}

TEST(ClockService, TheLeaseRecordNamesTheHeldGpus) {
  LeaseTable t;
  t.take(2, 1, ClockCaller{1000, 1000, 11, false});
  t.take(0, 3, ClockCaller{2000, 2000, 22, false});
  const std::string text = lease_record_text(t);
  EXPECT_EQ(text, "emo-leases/1\ngpu 0 uid 2000 pid 22\ngpu 2 uid 1000 pid 11\n");
  EXPECT_EQ(lease_record_gpus(text), (std::vector<unsigned>{0, 2}));
  EXPECT_TRUE(lease_record_gpus("").empty());
  EXPECT_TRUE(lease_record_gpus("gpu 1\n").empty());  // no header: not a record
  EXPECT_EQ(lease_record_gpus("emo-leases/1\ngpu x\ngpu 3 uid 1\n\n"), (std::vector<unsigned>{3}));
}

TEST(ClockService, ConfigFileDefaultsAndErrors) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / ("clock_service_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto defaults = load_clock_service_config((dir / "absent.conf").string(), false);
  EXPECT_EQ(defaults.socket, "/run/emo/emo.sock");
  EXPECT_EQ(defaults.socket_mode, 0666u);
  EXPECT_EQ(defaults.jobs_dir, "/run/emo/jobs");
  EXPECT_THROW(load_clock_service_config((dir / "absent.conf").string(), true), InputError);
  const auto path = (dir / "serve.conf").string();
  std::ofstream(path) << "# comment\nsocket = /tmp/x.sock  # trailing\nsocket_mode = 0660\nfloor_mhz = 600\n"
                         "admin_group = gpuadmin\nmin_switch_interval_ms = 2.5\n";
  const auto c = load_clock_service_config(path, true);
  EXPECT_EQ(c.socket, "/tmp/x.sock");
  EXPECT_EQ(c.socket_mode, 0660u);
  EXPECT_EQ(c.floor_mhz, 600u);
  EXPECT_EQ(c.admin_group, "gpuadmin");
  EXPECT_DOUBLE_EQ(c.min_switch_interval_ms, 2.5);
  const auto error = [&](const std::string& text) {
    std::ofstream(path) << text;
    try {
      load_clock_service_config(path, true);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error("\n\nsockt = /x\n"), path + ": line 3: unknown key \"sockt\"");
  EXPECT_EQ(error("socket_mode = 0999\n"), path + ": line 1: socket_mode = 0999: not an octal mode such as 0660");
  EXPECT_EQ(error("floor_mhz = -5\n"), path + ": line 1: floor_mhz = -5: not a number in [0, 999999]");
  EXPECT_EQ(error("floor_mhz\n"), path + ": line 1: not \"key = value\"");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace emo::runtime
