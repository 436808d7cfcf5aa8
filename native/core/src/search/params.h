// params.h - the search knobs the native search reads, under lc0's UCI names,
// with lc0 v0.32.1's defaults. lc0_rocm/search/params.py defines them,
// validates them and passes them in by name; tests/test_native_params.py
// holds the names, types and defaults here (and params.cpp's) to it.
#pragma once
#include <algorithm>
#include <string>

namespace lc0core {
namespace search {

enum FpuStrategy : int { kFpuReduction = 0, kFpuAbsolute = 1, kFpuSame = 2 };

struct SearchParams {
  double CPuct = 1.745, CPuctAtRoot = 1.745;
  double CPuctBase = 38739.0, CPuctBaseAtRoot = 38739.0;
  double CPuctFactor = 3.894, CPuctFactorAtRoot = 3.894;
  bool RootHasOwnCpuctParams = false;
  bool TwoFoldDraws = true;
  int FpuStrategy = kFpuReduction;
  double FpuValue = 0.330;
  int FpuStrategyAtRoot = kFpuSame;
  double FpuValueAtRoot = 1.0;
  double PolicyTemperature = 1.359;
  int MaxPrefetch = 32;
  int MaxCollisionVisits = 80000;
  int MaxCollisionVisitsScalingStart = 28;
  int MaxCollisionVisitsScalingEnd = 145000;
  double MaxCollisionVisitsScalingPower = 1.25;
  bool OutOfOrderEval = true;
  double MaxOutOfOrderEvalsFactor = 2.4;
  bool StickyEndgames = true;
  double MovesLeftMaxEffect = 0.0345, MovesLeftThreshold = 0.8, MovesLeftSlope = 0.0027;
  double MovesLeftConstantFactor = 0.0, MovesLeftScaledFactor = 1.6521;
  double MovesLeftQuadraticFactor = -0.6521;
  double DrawScore = 0.0;
  double SmartPruningFactor = 1.33;
  int SmartPruningMinimumBatches = 0;
  double DirichletNoiseEpsilon = 0.0, DirichletNoiseAlpha = 0.3;
  bool NodesAsPlayouts = false;
  // A node limit cuts the batch that would pass it (lc0 stops only between
  // batches, up to a minibatch beyond).
  bool StrictNodes = false;
  double MinimumKLDGainPerNode = 0.0;
  int KLDGainAverageInterval = 100;
  double NpsLimit = 0.0;
  double WDLMaxS = 1.4;
  long long NNCacheSize = 2000000;
  int MinibatchSize = 7;
  int Threads = 1;                // resolved by the caller (0 is never passed)
  // lc0's task workers: threads that pick in separate branches of the tree
  // for each gathering thread. -1: min(4, cores / max(1, Threads - 1) - 1), lc0's,
  // counting the cores this process may use (host.h).
  int TaskWorkers = -1;
  int MinimumPickingWork = 1;     // a branch with more visits than this may go to a task
  int MinimumRemainingPickingWork = 20;   // ... if this many are left for the others
  int MinimumProcessingWork = 20; // leaves picked before their expansion is split over tasks
  int MinimumPerTaskProcessing = 8;   // ... into parts of at least this many
  // lc0's idle-backend rule (search threads on slots of their own): a
  // gathering stops early when more than ThreadIdlingThreshold threads are
  // not at the network and it has more than IdlingMinimumWork requests.
  // -1: the gathering threads less 2, at least 1 (idle_threshold): lc0's 1
  // at its two threads, and with more threads still "fewer than two at the
  // network", where lc0's 1 would end nearly every gathering at once.
  int IdlingMinimumWork = 0;
  int ThreadIdlingThreshold = -1;
  int idle_threshold(int gathering) const {
    return ThreadIdlingThreshold >= 0 ? ThreadIdlingThreshold : std::max(1, gathering - 2);
  }
  // Below this many visits at the root one search thread gathers and the
  // others wait: in a small tree, batches gathered side by side put a large
  // share of its visits in flight at once, which costs quality per node
  // (docs/SEARCH.md), while the time they would save is small.
  int ParallelSearchMinimumVisits = 2000;
  // lc0's SolidTreeThreshold (visits that make a node's children one block).
  // lc0 uses 100; here never by default: our pools already keep siblings
  // near, and on the H100 maia search 100 measured no faster (see
  // BENCHMARKS.md, "What did not pay").
  int SolidTreeThreshold = 2000000000;

  // (cpuct init, base, factor) of a node.
  void cpuct(bool at_root, double* init, double* base, double* factor) const {
    if (at_root && RootHasOwnCpuctParams) {
      *init = CPuctAtRoot, *base = CPuctBaseAtRoot, *factor = CPuctFactorAtRoot;
    } else {
      *init = CPuct, *base = CPuctBase, *factor = CPuctFactor;
    }
  }
  // (absolute?, value) of a node's first-play urgency.
  void fpu(bool at_root, bool* absolute, double* value) const {
    if (!at_root || FpuStrategyAtRoot == kFpuSame) {
      *absolute = FpuStrategy == kFpuAbsolute, *value = FpuValue;
    } else {
      *absolute = FpuStrategyAtRoot == kFpuAbsolute, *value = FpuValueAtRoot;
    }
  }
  // Sets a knob by its lc0 name; false when the name is unknown.
  bool set(const std::string& name, double value);
};

}  // namespace search
}  // namespace lc0core
