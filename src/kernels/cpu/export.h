// The entry point of a CPU op. In the HWY_ONCE section of an op's .cc, inside namespace
// g4::cpu, G4_CPU_EXPORT(Name, (params), (args)) exports the per-target NameImpl (HWY_EXPORT)
// and defines Name(params), as declared in kernels.h, calling the NameImpl of the best target
// of the running CPU (HWY_DYNAMIC_DISPATCH; see target.cc for how tests pin a target). args
// are the names of params, as a call passes them:
//   G4_CPU_EXPORT(Softcap, (ThreadPool& pool, float* x, int64_t n, float cap), (pool, x, n, cap))
// It includes nothing: the .cc includes "hwy/highway.h" after "hwy/foreach_target.h", as Highway
// requires.
#pragma once

#define G4_CPU_EXPORT(name, params, args) \
  HWY_EXPORT(name##Impl);                 \
  void name params { HWY_DYNAMIC_DISPATCH(name##Impl) args; }
