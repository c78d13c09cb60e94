// A reusable LLVM optimization pipeline for the PTX back end (see pipeline.rs).
//
// LLVM's C API sets up the whole new pass manager for every call: `LLVMRunPasses` constructs
// a PassBuilder, registers every analysis in four analysis managers and cross-registers their
// proxies before it parses "default<O3>". For a small kernel that set-up costs about as much
// as the optimization itself, so `Optimizer` does it once: the PassBuilder and its analysis
// managers live as long as the back end's target machine. The pass pipeline itself is
// rebuilt for each module, because some passes are single-use (ModuleInlinerWrapperPass
// moves its inner pipeline into an adaptor when it runs). After each module the analysis
// managers are cleared, so no cached result outlives the module it describes.
//
// Code generation is NOT reused: NVPTX's AsmPrinter keeps per-module state keyed by
// Function* (demoted shared variables) that it never clears, so a reused code-generation
// pass manager emits stale declarations when a new function lands at an old address.
// tests/fixtures.rs::reused_pipelines_give_the_same_ptx_as_fresh_ones guards both points.
//
// Only plain C types cross the boundary; nothing here throws (LLVM is built without
// exceptions).

#include <llvm-c/TargetMachine.h>
#include <llvm-c/Types.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CBindingWrapping.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>

using namespace llvm;

namespace {

struct Optimizer {
  PassInstrumentationCallbacks pic;
  LoopAnalysisManager lam;
  FunctionAnalysisManager fam;
  CGSCCAnalysisManager cgam;
  ModuleAnalysisManager mam;
  std::unique_ptr<PassBuilder> builder;
  OptimizationLevel level;
};

TargetMachine *target_machine(LLVMTargetMachineRef tm) {
  return reinterpret_cast<TargetMachine *>(tm);
}

}  // namespace

extern "C" {

// Builds the optimization pipeline of `opt_level` (0..3) for `tm`.
void *pydevice_optimizer_new(LLVMTargetMachineRef tm, unsigned opt_level) {
  auto *o = new Optimizer();
  PipelineTuningOptions tuning;
  o->builder = std::make_unique<PassBuilder>(target_machine(tm), tuning, std::nullopt, &o->pic);
  o->builder->registerModuleAnalyses(o->mam);
  o->builder->registerCGSCCAnalyses(o->cgam);
  o->builder->registerFunctionAnalyses(o->fam);
  o->builder->registerLoopAnalyses(o->lam);
  o->builder->crossRegisterProxies(o->lam, o->fam, o->cgam, o->mam);
  o->level = opt_level == 0   ? OptimizationLevel::O0
             : opt_level == 1 ? OptimizationLevel::O1
             : opt_level == 2 ? OptimizationLevel::O2
                              : OptimizationLevel::O3;
  return o;
}

// Runs the pipeline on `module`, then forgets every analysis result.
void pydevice_optimizer_run(void *handle, LLVMModuleRef module) {
  auto *o = static_cast<Optimizer *>(handle);
  Module &m = *unwrap(module);
  ModulePassManager passes = o->level == OptimizationLevel::O0
                                 ? o->builder->buildO0DefaultPipeline(o->level)
                                 : o->builder->buildPerModuleDefaultPipeline(o->level);
  passes.run(m, o->mam);
  o->lam.clear();
  o->fam.clear();
  o->cgam.clear();
  o->mam.clear();
}

void pydevice_optimizer_free(void *handle) { delete static_cast<Optimizer *>(handle); }

}  // extern "C"
