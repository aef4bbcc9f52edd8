// The messages between the processes of an MPI job (job/load_job.h, job/mpi_worker.h) as bytes:
// CBOR (RFC 8949, nlohmann::json::to_cbor/from_cbor: integers and doubles cross exactly), behind
// one leading character that says what the bytes are. No MPI here: the transport (job/mpi_comm.h)
// only moves the bytes, and these encoders are tested without it.
//
//   command (process 0 → another):  'O' ports | 'R' round | 'T' released | 'S' static clocks |
//                                   'W' static clocks' energy (watts × seconds) | 'L' lanes,
//                                   then CBOR
//   reply   (another → process 0):  'P' + CBOR array, one entry per rank of that process
//                                   'E' + an encoded error (encode_error)
//   error:                          "I|path\nproblem" (emo::InputError) or "X|what" (anything else)
#pragma once

#include <exception>
#include <string>
#include <vector>

#include "job/rank_worker.h"
#include "timing/ports.h"
#include "trace/job.h"
#include "trace/trace.h"

namespace emo::job::messages {

/// What process 0 asks of another process in the decomposed solve (the RankWorker steps).
enum class CommandKind : char {
  kPorts = 'O',    ///< Step 0: here are your ranks' open pins (`cuts`); reduce them to ports.
  kRound = 'R',    ///< Step 2: solve your ranks against `cuts` in round `round`.
  kStatics = 'S',  ///< Run your ranks at each of `clocks_mhz`.
  kStaticEnergies = 'W',  ///< Your ranks' energy above idle at each of `clocks_mhz` (RankWorker::static_energies).
  kReleased = 'T', ///< Step 3: run your ranks' last plans again released at `cuts`' pins (RankWorker::released).
  kLanes = 'L',    ///< The job view: your ranks' lanes with their ports ending at `port_end_ns` (static
                   ///< clock: clocks_mhz[0] > 0), RankWorker::lanes.
};

/// One command, for the ranks of the process it goes to (in their job order).
struct Command {
  CommandKind kind = CommandKind::kPorts;
  std::string gpu{};                  ///< The simulated GPU's catalog id (model::GpuCatalog::builtin()).
  std::vector<trace::JobCut> cuts{};  ///< kPorts: the open pins (JobPorts::open); kRound: the round's cuts;
                                      ///< kReleased: the releases.
  int round = 0;                    ///< kRound: 0 first.
  double rank_slowdown = 0;         ///< kRound: each rank's own share of the target (RankWorker::solve).
  std::vector<double> clocks_mhz{};   ///< kStatics, kStaticEnergies: SM clocks, MHz; kLanes: {the static clock, or 0}.
  std::vector<std::vector<TimeNs>> port_end_ns{};  ///< kLanes: per rank, per port, its end (the rank's clock, ns).
};

/// The bytes of `c`.
std::string encode(const Command& c);
/// Whether `bytes` starts as a command (the loop's own one-character messages, mpi::kDone and
/// the like, do not).
bool is_command(const std::string& bytes);
/// The command `bytes` encodes. Throws std::invalid_argument (not a command) or
/// nlohmann::json::exception (malformed CBOR).
Command decode_command(const std::string& bytes);

/// A reply: each rank's result, in order.
std::string encode_reply(const std::vector<timing::PortGraph>& ports);
std::string encode_reply(const std::vector<RankPlan>& plans);
std::string encode_reply(const std::vector<std::vector<RankRun>>& runs);  ///< kStatics; kReleased: one run per rank
std::string encode_reply(const std::vector<RankLane>& lanes);
std::string encode_energies_reply(const std::vector<std::vector<double>>& energies);  ///< kStaticEnergies
/// A reply carrying the error `e` (the process failed its part).
std::string encode_failure(const std::exception_ptr& e);

/// The results of a reply. A failure reply throws the error it carries (throw_decoded); a
/// malformed one std::invalid_argument or nlohmann::json::exception.
std::vector<timing::PortGraph> decode_ports_reply(const std::string& bytes);
std::vector<RankPlan> decode_plans_reply(const std::string& bytes);
std::vector<std::vector<RankRun>> decode_statics_reply(const std::string& bytes);
std::vector<RankLane> decode_lanes_reply(const std::string& bytes);
std::vector<std::vector<double>> decode_energies_reply(const std::string& bytes);

/// An error as "I|path\nproblem" (emo::InputError) or "X|what" (anything else), to cross to process 0.
std::string encode_error(const std::exception_ptr& e);
/// Throws what encode_error encoded: InputError(path, problem), or std::runtime_error(what).
[[noreturn]] void throw_decoded(const std::string& s);

/// Rank digests (trace::digest) for linking the job on process 0 (load_own_traces_mpi).
std::string encode_digests(const std::vector<trace::RankDigest>& digests);
std::vector<trace::RankDigest> decode_digests(const std::string& bytes);

}  // namespace emo::job::messages
