// params.cpp - knob lookup by lc0 name.
#include "params.h"

namespace lc0core {
namespace search {

bool SearchParams::set(const std::string& name, double v) {
#define LC0_REAL(field) if (name == #field) { field = v; return true; }
#define LC0_INT(field) if (name == #field) { field = int(v); return true; }
#define LC0_BOOL(field) if (name == #field) { field = v != 0.0; return true; }
  LC0_REAL(CPuct) LC0_REAL(CPuctAtRoot) LC0_REAL(CPuctBase) LC0_REAL(CPuctBaseAtRoot)
  LC0_REAL(CPuctFactor) LC0_REAL(CPuctFactorAtRoot) LC0_BOOL(RootHasOwnCpuctParams)
  LC0_BOOL(TwoFoldDraws) LC0_INT(FpuStrategy) LC0_REAL(FpuValue) LC0_INT(FpuStrategyAtRoot)
  LC0_REAL(FpuValueAtRoot) LC0_REAL(PolicyTemperature) LC0_INT(MaxPrefetch)
  LC0_INT(MaxCollisionVisits) LC0_INT(MaxCollisionVisitsScalingStart)
  LC0_INT(MaxCollisionVisitsScalingEnd) LC0_REAL(MaxCollisionVisitsScalingPower)
  LC0_BOOL(OutOfOrderEval) LC0_REAL(MaxOutOfOrderEvalsFactor) LC0_BOOL(StickyEndgames)
  LC0_REAL(MovesLeftMaxEffect) LC0_REAL(MovesLeftThreshold) LC0_REAL(MovesLeftSlope)
  LC0_REAL(MovesLeftConstantFactor) LC0_REAL(MovesLeftScaledFactor)
  LC0_REAL(MovesLeftQuadraticFactor) LC0_REAL(DrawScore) LC0_REAL(SmartPruningFactor)
  LC0_INT(SmartPruningMinimumBatches) LC0_REAL(DirichletNoiseEpsilon)
  LC0_REAL(DirichletNoiseAlpha) LC0_BOOL(NodesAsPlayouts) LC0_BOOL(StrictNodes) LC0_REAL(MinimumKLDGainPerNode)
  LC0_INT(KLDGainAverageInterval) LC0_REAL(NpsLimit) LC0_REAL(WDLMaxS)
  if (name == "NNCacheSize") { NNCacheSize = (long long)v; return true; }
  LC0_INT(MinibatchSize) LC0_INT(Threads)
  LC0_INT(TaskWorkers) LC0_INT(MinimumPickingWork) LC0_INT(MinimumRemainingPickingWork)
  LC0_INT(MinimumProcessingWork) LC0_INT(MinimumPerTaskProcessing)
  LC0_INT(IdlingMinimumWork) LC0_INT(ThreadIdlingThreshold) LC0_INT(SolidTreeThreshold)
  LC0_INT(ParallelSearchMinimumVisits)
#undef LC0_REAL
#undef LC0_INT
#undef LC0_BOOL
  return false;
}

}  // namespace search
}  // namespace lc0core
