// Reusable LLVM pipelines for the PTX back end: optimization and code generation (see pipeline.rs).
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
// Code generation is reused too, with one precaution. Assembling LLVM's legacy
// code-generation pass manager (`addPassesToEmitFile`) costs ~0.4 ms, as much as generating
// code for a small kernel, so `CodeGen` keeps one and runs it on module after module, with
// its output stream pointed at a buffer it owns. But NVPTX's AsmPrinter keeps a map from
// `Function*` to the shared variables it demoted into that function (`localDecls`) and never
// clears it: a later module whose function landed at a freed function's address would get
// the old function's declarations. So every module a `CodeGen` has seen stays alive as long
// as the `CodeGen` does (the Rust side keeps them and their contexts, pipeline.rs), and the
// Rust side replaces the `CodeGen` after a bounded number of modules, freeing those modules
// with it. No address is then ever reused while a stale key can match it.
// tests/fixtures.rs::reused_pipelines_give_the_same_ptx_as_fresh_ones guards all of this.
//
// Only plain C types cross the boundary; nothing here throws (LLVM is built without
// exceptions).

#include <llvm-c/TargetMachine.h>
#include <llvm/CodeGen/MachineModuleInfo.h>
#include <llvm/CodeGen/Passes.h>
#include <llvm/CodeGen/TargetPassConfig.h>
#include <llvm/CodeGen/AsmPrinter.h>
#include <llvm/MC/MCAsmBackend.h>
#include <llvm/MC/MCAsmInfo.h>
#include <llvm/MC/MCCodeEmitter.h>
#include <llvm/MC/MCInstPrinter.h>
#include <llvm/MC/MCStreamer.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/InitializePasses.h>
#include <llvm/PassInfo.h>
#include <llvm/PassRegistry.h>
#include <llvm/Support/FormattedStream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm-c/Types.h>
#include <llvm/ADT/PostOrderIterator.h>
#include <llvm/Analysis/CFG.h>
#include <llvm/Analysis/LazyValueInfo.h>
#include <llvm/IR/ConstantRange.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/PatternMatch.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/Support/KnownBits.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/ScalarEvolution.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/Transforms/Scalar/LoopPassManager.h>
#include <llvm/Transforms/Utils/LoopUtils.h>
#include <llvm/Transforms/Utils/BasicBlockUtils.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/Local.h>
#include <llvm/Transforms/Utils/ValueMapper.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CBindingWrapping.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/AggressiveInstCombine/AggressiveInstCombine.h>
#include <llvm/Transforms/InstCombine/InstCombine.h>
#include <llvm/Transforms/Scalar/CorrelatedValuePropagation.h>
#include <llvm/Transforms/Scalar/DivRemPairs.h>
#include <llvm/Transforms/Scalar/EarlyCSE.h>
#include <llvm/Transforms/Scalar/GVN.h>
#include <llvm/Transforms/Scalar/InferAlignment.h>
#include <llvm/Transforms/Scalar/JumpThreading.h>
#include <llvm/Transforms/Scalar/Reassociate.h>
#include <llvm/Transforms/Scalar/SROA.h>
#include <llvm/Transforms/Scalar/SimplifyCFG.h>
#include <llvm/Transforms/Scalar/SpeculativeExecution.h>
#include <llvm/Transforms/Vectorize/VectorCombine.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <mutex>
#include <utility>

using namespace llvm;
using namespace llvm::PatternMatch;

namespace llvm {
// NVPTX's cache of `nvvm.annotations` per Module* (NVPTXUtilities.h, not installed). The
// AsmPrinter clears a module's entry when it finishes; a module that is optimized but never
// code-generated must have its entry cleared before it is freed, or a later module at the
// same address would read its annotations.
void clearAnnotationCache(const Module *);
}  // namespace llvm

namespace {

struct Optimizer {
  PassInstrumentationCallbacks pic;
  LoopAnalysisManager lam;
  FunctionAnalysisManager fam;
  CGSCCAnalysisManager cgam;
  ModuleAnalysisManager mam;
  std::unique_ptr<PassBuilder> builder;
  OptimizationLevel level;
  // The straight-line pipeline, built on first use and reused: unlike the per-module
  // pipelines (see above), its passes keep no state between functions.
  std::unique_ptr<ModulePassManager> straight;
};

class LeanPassManager;

struct CodeGen {
  SmallString<0> text;
  raw_svector_ostream out{text};
  // The pass manager the target's pass configuration was built through: the configuration
  // (a pass in `passes`) keeps a pointer to it, so it is destroyed after them.
  std::unique_ptr<LeanPassManager> lean;
  legacy::PassManager passes;
  ~CodeGen();
};

// The stream the assembly printer writes PTX through. LLVM's `formatted_raw_ostream` scans
// every byte written to track the line and column, which only matters for aligning the
// comments of verbose assembly (off here: the PTX has none but NVPTX's own); that scan cost
// ~3% of a small kernel's compile. This one hands the bytes straight on. (Overriding the
// base's private virtual `write_impl` is allowed; the base, unbuffered because the vector
// stream under it is, calls it for every write.)
class UnscannedStream final : public formatted_raw_ostream {
 public:
  explicit UnscannedStream(raw_ostream &under) : formatted_raw_ostream(under), under_(under) {}

 private:
  void write_impl(const char *p, size_t n) override { under_.write(p, n); }
  raw_ostream &under_;
};

// Which code-generation passes a `CodeGen` leaves out, by their registered argument names.
// The target's pass configuration adds its passes through `LeanPassManager::add`, which
// drops these as they come, so they are never scheduled (nor the analyses only they need),
// at no cost per module.
//
// Always left out: passes for what the PTX back end's modules never contain: garbage
// collection (gc-lowering, shadow-stack-gc-lowering), safe stacks, function entry/exit
// instrumentation, memcmp calls (mergeicmps, expand-memcmp), vector-predication and masked
// memory intrinsics, thread-locals, vector-library calls, exceptions (lowerinvoke), callbr,
// variadic functions, statepoints, fentry/XRay/sanitizer metadata and the stack-frame-layout
// remark. Every fixture's and benchmark kernel's PTX is byte-identical without them (the
// fixture goldens check).
//
// Left out of loop-free leaf modules as well (`straight_line`): n-ary reassociation and the
// two EarlyCSE runs after the first (they look for sums that unrolled loops make, and the
// straight-line optimizer pipeline, Reassociate then GVN, leaves none), loop strength
// reduction with its loop canonicalization and early machine LICM (no loops), constant
// hoisting, speculative execution (the optimizer ran it), machine PHI optimization, early
// tail duplication and the machine scheduler: without them every loop-free fixture's PTX is
// byte-identical. And, since session 18, five machine-code clean-ups whose work ptxas does
// again anyway: machine CSE, the peephole optimizer, dead machine-instruction elimination,
// branch folding and block placement, and stack-slot colouring (which merges only spill
// slots, and NVPTX has no register allocator, so no spills). Without them the PTX of some
// loop-free fixtures changes (virtual registers numbered differently, a redundant `mov` or
// `cvt` left for ptxas, a block laid out elsewhere) but `ptxas -O3` makes byte-identical
// cubins of every fixture and benchmark kernel (scripts/sass_diff.sh; bench/NOTES.md,
// session 18), ~5% of a small kernel's compile.
// lower::ptx::tests::skipping_the_straight_line_passes_leaves_every_loop_free_fixtures_machine_code_unchanged
// compares every loop-free fixture with and without them (its PTX, else its cubin). Tried
// and kept, because leaving them out changes loop-free fixtures' SASS: strength reduction
// (`negative_index`), GEP offset splitting, the load/store vectorizer, the second SROA,
// EarlyCSE, CodeGenPrepare, machine sinking and register coalescing. The stack-colouring
// passes for local arrays are kept although no fixture needs them: kernels with several
// local arrays do.
bool keep_codegen_pass(StringRef arg, bool straight_line, unsigned &early_cse_seen) {
  static const char *const never[] = {
      "gc-lowering",        "shadow-stack-gc-lowering",
      "safe-stack",         "post-inline-ee-instrument",
      "mergeicmps",         "expand-memcmp",
      "expandvp",           "scalarize-masked-mem-intrin",
      "tlshoist",           "replace-with-veclib",
      "lowerinvoke",        "callbrprepare",
      "expand-variadics",   "fixup-statepoint-caller-saved",
      "fentry-insert",      "xray-instrumentation",
      "machine-sanmd",      "stack-frame-layout",
  };
  for (const char *n : never)
    if (arg == n) return false;
  if (!straight_line) return true;
  if (arg == "early-cse") return ++early_cse_seen == 1;
  static const char *const straight[] = {
      "nary-reassociate",      "loop-reduce",         "canon-freeze",
      "early-machinelicm",     "consthoist",          "opt-phis",
      "early-tailduplication", "machine-scheduler",   "speculative-execution",
      "machine-cse",           "peephole-opt",        "dead-mi-elimination",
      "branch-folder",         "block-placement",     "stack-slot-coloring",
  };
  for (const char *n : straight)
    if (arg == n) return false;
  return true;
}

class LeanPassManager final : public legacy::PassManagerBase {
 public:
  LeanPassManager(legacy::PassManager &inner, bool straight_line)
      : inner_(inner), straight_line_(straight_line) {}
  void add(Pass *p) override {
    const PassInfo *info = PassRegistry::getPassRegistry()->getPassInfo(p->getPassID());
    if (info && !keep_codegen_pass(info->getPassArgument(), straight_line_, early_cse_seen_)) {
      delete p;
      return;
    }
    inner_.add(p);
  }

 private:
  legacy::PassManager &inner_;
  bool straight_line_;
  unsigned early_cse_seen_ = 0;
};

CodeGen::~CodeGen() = default;

// `LLVMTargetMachine::addPassesToEmitFile` for assembly, with the pass list above and the
// unscanned output stream. Returns false if the target cannot print assembly.
bool add_codegen_passes(LLVMTargetMachine &tm, CodeGen &c, bool straight_line) {
  c.lean = std::make_unique<LeanPassManager>(c.passes, straight_line);
  LeanPassManager &pm = *c.lean;
  auto *mmi = new MachineModuleInfoWrapperPass(&tm);
  TargetPassConfig *config = tm.createPassConfig(pm);
  config->setDisableVerify(true);
  pm.add(config);
  pm.add(mmi);
  if (config->addISelPasses()) return false;
  config->addMachinePasses();
  config->setInitialized();
  MCContext &ctx = mmi->getMMI().getContext();
  const MCAsmInfo &mai = *tm.getMCAsmInfo();
  MCInstPrinter *printer = tm.getTarget().createMCInstPrinter(
      tm.getTargetTriple(), mai.getAssemblerDialect(), mai, *tm.getMCInstrInfo(),
      *tm.getMCRegisterInfo());
  if (!printer) return false;
  std::unique_ptr<MCAsmBackend> backend(tm.getTarget().createMCAsmBackend(
      *tm.getMCSubtargetInfo(), *tm.getMCRegisterInfo(), tm.Options.MCOptions));
  std::unique_ptr<MCStreamer> streamer(tm.getTarget().createAsmStreamer(
      ctx, std::make_unique<UnscannedStream>(c.out), printer, nullptr, std::move(backend)));
  if (!streamer) return false;
  FunctionPass *asm_printer = tm.getTarget().createAsmPrinter(tm, std::move(streamer));
  if (!asm_printer) return false;
  pm.add(asm_printer);
  pm.add(createFreeMachineFunctionPass());
  return true;
}

// A leaf module: one defined function, which calls nothing but intrinsics, and no global
// variables. For it, `buildPerModuleDefaultPipeline` is mostly interprocedural work with
// nothing to do (IPSCCP, called-value propagation, GlobalOpt, function-attribute inference,
// the inliner's call-graph walk) around the function simplification pipeline it runs on each
// function. The leaf pipeline keeps what acts on a single function: the target's
// pipeline-start passes (NVVMReflect, NVVMIntrRange), the function simplification pipeline
// and the module optimization pipeline (loop vectorizer/unroller, late clean-ups), at the
// same level. On the fixtures it gives PTX of the same length or shorter (a test checks),
// for ~12% less work per small kernel.
bool is_floor_fn(const Function *f);

bool is_leaf_module(const Module &m) {
  if (!m.global_empty()) return false;
  unsigned defined = 0;
  for (const Function &f : m) {
    if (f.isDeclaration()) {
      if (!f.isIntrinsic() && !is_floor_fn(&f)) return false;
      continue;
    }
    ++defined;
  }
  return defined == 1;
}

// Whether a function of `m` has a loop (a back edge in its control-flow graph).
bool has_loops(const Module &m) {
  for (const Function &f : m) {
    if (f.isDeclaration()) continue;
    SmallVector<std::pair<const BasicBlock *, const BasicBlock *>, 8> edges;
    FindFunctionBackedges(f, edges);
    if (!edges.empty()) return true;
  }
  return false;
}

// One extension of a value, not two. An array index is sign-extended to 64 bits (a Python
// `int` index may be negative); correlated value propagation then rewrites the `sext` as a
// `zext nneg` in the blocks where it can prove the index non-negative, and leaves it a `sext`
// elsewhere. The two are one value (`nneg` says the operand is non-negative, where both give
// the same bits), but GVN and CFG simplification do not see it, so the address of `u[i, j]`
// computed in both arms of `if 0 < j < cols - 1: ... else: ...` (stencil5) was computed,
// and the element loaded, twice, after the branch, where nvcc and numba-cuda load it once
// before. This pass, run after each InstCombine, turns a `zext nneg` back into a `sext` when
// its operand is also sign-extended to the same type, so later GVN and hoisting merge them.
// (Replacing `zext nneg x` by `sext x` only defines what was poison for a negative `x`.)
struct OneExtensionPass : PassInfoMixin<OneExtensionPass> {
  PreservedAnalyses run(Function &f, FunctionAnalysisManager &) {
    SmallVector<ZExtInst *, 8> rewrite;
    for (BasicBlock &bb : f)
      for (Instruction &inst : bb) {
        auto *z = dyn_cast<ZExtInst>(&inst);
        if (!z || !z->hasNonNeg()) continue;
        for (User *u : z->getOperand(0)->users()) {
          auto *s = dyn_cast<SExtInst>(u);
          if (s && s->getType() == z->getType()) {
            rewrite.push_back(z);
            break;
          }
        }
      }
    for (ZExtInst *z : rewrite) {
      auto *s = new SExtInst(z->getOperand(0), z->getType(), "", z->getIterator());
      s->takeName(z);
      z->replaceAllUsesWith(s);
      z->eraseFromParent();
    }
    return rewrite.empty() ? PreservedAnalyses::all() : PreservedAnalyses::none();
  }
  static bool isRequired() { return false; }
};

// Floor division and Python's modulo at the narrowest width their operands allow (issue 31).
// The PTX emitter writes a signed 64-bit `x // y` or `x % y` as a call to
// `__pyd_floordiv.i64` / `__pyd_floormod.i64` (emit.rs's FLOORDIV_I64), declared without side
// effects, and this pass expands each call once SROA and the first InstCombine have put its
// operands in registers. Index arithmetic written the way CUDA programmers write it mixes
// `uint32` thread indices with `int32` shapes, which the typing rules (docs/semantics.md
// §3.7) promote to `int64`: `b = idx // (NH * N * d)`, `rest = idx % (NH * N * d)`,
// `nh = rest // (N * d)`. Expanded at 64 bits each is a 64-bit division (a called
// subroutine of ~70 SASS instructions behind NVPTX's run-time 32-bit bypass) plus the floor
// corrections, and the remainder's range, which LLVM's value tracking cannot bound through
// the corrections, keeps every later division in the chain at 64 bits: llm.c's
// `permute_kernel` had 350 SASS instructions and ran 1.53x slower than nvcc's 119, whose
// `int` arithmetic is 32-bit. The value ranges decide the width here:
//   - both operands fit `int32` (known sign bits, or LazyValueInfo's range at the call: a
//     dominating `if idx < N:` bounds `idx`) and `x` may be negative: the division, the
//     remainder and the corrections are done at 32 bits and extended, except `x // -1`,
//     which is `-x` at 64 bits (`INT32_MIN // -1` does not fit);
//   - `x` fits `uint32` and `y` fits `int32` (`idx // C`, with `idx` any `uint32`, or a
//     non-negative `int32`): one unsigned 32-bit division of `x` by `|y|`, then the sign:
//     for `y < 0` the quotient is `-(q + (r != 0))` and the remainder `r - |y|` when
//     `r != 0`;
//   - both fit `uint32`: an unsigned 32-bit division;
//   - otherwise, 0 <= x and 0 < y: an unsigned 64-bit division;
//   - otherwise the 64-bit expansion the emitter used to write.
// In the first two cases the remainder is the sign extension of a 32-bit value (|r| < |y|),
// so a later division of it by another `int32` shape is done at 32 bits as well. Every
// expansion gives the value Python's operators give (y == 0 gives 0, as NumPy's) for every
// pair of operands in the ranges it was chosen for. Run after each InstCombine (the
// peephole extension point) and in the straight-line pipeline; whatever a pipeline leaves
// (at -O0) is expanded at the end without value ranges.
constexpr const char *kFloorDiv = "__pyd_floordiv.i64";
constexpr const char *kFloorMod = "__pyd_floormod.i64";

bool is_floor_fn(const Function *f) {
  return f && f->isDeclaration() && (f->getName() == kFloorDiv || f->getName() == kFloorMod);
}

// Conditions that hold at an instruction: the branch conditions of the edges every path to it
// takes. Walking up the dominator tree from the instruction's block, a block with a single
// predecessor ending in a conditional branch is entered only through that edge, so the
// branch's condition (negated on its false edge) holds in it and in every block it
// dominates. An `and` (or a logical `and` written as a select) on a true edge, and an `or` on
// a false edge, give both of their operands. This is how `if x < width:` tells the range
// queries below that `width > x >= 0` inside the branch, and a loop's guard
// `for so in range(0, C, 32)` that `C > 0` inside the loop: LazyValueInfo finds such facts
// only for values the conditions name, and not across a loop's back edge.
struct Fact {
  ICmpInst::Predicate pred;
  Value *lhs, *rhs;
};

void add_fact(Value *cond, bool holds, SmallVectorImpl<Fact> &out, unsigned depth) {
  if (auto *c = dyn_cast<ICmpInst>(cond)) {
    out.push_back({holds ? c->getPredicate() : c->getInversePredicate(), c->getOperand(0),
                   c->getOperand(1)});
    return;
  }
  if (depth == 0) return;
  Value *a, *b;
  if (holds ? match(cond, m_LogicalAnd(m_Value(a), m_Value(b)))
            : match(cond, m_LogicalOr(m_Value(a), m_Value(b)))) {
    add_fact(a, holds, out, depth - 1);
    add_fact(b, holds, out, depth - 1);
  }
}

void facts_at(Instruction *at, const DominatorTree &dt, SmallVectorImpl<Fact> &out) {
  const DomTreeNode *node = dt.getNode(at->getParent());
  for (unsigned steps = 0; node && steps < 64; node = node->getIDom(), ++steps) {
    BasicBlock *bb = node->getBlock();
    BasicBlock *pred = bb->getSinglePredecessor();
    if (!pred) continue;
    auto *br = dyn_cast<BranchInst>(pred->getTerminator());
    if (!br || !br->isConditional() || br->getSuccessor(0) == br->getSuccessor(1)) continue;
    add_fact(br->getCondition(), br->getSuccessor(0) == bb, out, 3);
  }
}

// The facts at one instruction, collected once for all the range queries made there.
struct RangeQuery {
  Instruction *at;
  LazyValueInfo &lvi;
  const DominatorTree *dt;
  SmallVector<Fact, 8> facts;
  RangeQuery(Instruction *at, LazyValueInfo &lvi, const DominatorTree *dt)
      : at(at), lvi(lvi), dt(dt) {
    if (dt) facts_at(at, *dt, facts);
  }
};

ConstantRange range_at(Value *v, RangeQuery &q, unsigned depth);

// The range the facts give `v`: from `v < w`, `v`'s values below the largest of `w`, and so
// on; a fact about `sext(v)` or `zext(v)` bounds `v` too (within `v`'s type).
ConstantRange fact_range(Value *v, RangeQuery &q, unsigned depth) {
  unsigned bits = v->getType()->getIntegerBitWidth();
  ConstantRange r = ConstantRange::getFull(bits);
  for (const Fact &f : q.facts) {
    for (int side = 0; side < 2; ++side) {
      Value *s = side ? f.rhs : f.lhs, *o = side ? f.lhs : f.rhs;
      ICmpInst::Predicate p = side ? ICmpInst::getSwappedPredicate(f.pred) : f.pred;
      if (!s->getType()->isIntegerTy()) continue;
      Value *inner = s;
      auto *cast = dyn_cast<CastInst>(s);
      if (s != v) {
        if (!cast || cast->getOperand(0) != v ||
            (cast->getOpcode() != Instruction::SExt && cast->getOpcode() != Instruction::ZExt))
          continue;
        inner = v;
      }
      // (One level of facts for the other side: enough for `x < w` with `x` an index, and
      // the cost stays linear in the number of facts.)
      ConstantRange region =
          ConstantRange::makeAllowedICmpRegion(p, range_at(o, q, std::min(depth, 1u)));
      if (inner != s) {
        // The region of the extension, back in `v`'s type: its signed (sext) or unsigned
        // (zext) bounds, where they fit that type.
        unsigned wide = s->getType()->getIntegerBitWidth();
        bool sx = cast->getOpcode() == Instruction::SExt;
        ConstantRange dom = sx ? ConstantRange::getFull(bits).signExtend(wide)
                               : ConstantRange::getFull(bits).zeroExtend(wide);
        region = region.intersectWith(dom, sx ? ConstantRange::Signed : ConstantRange::Unsigned);
        if (region.isEmptySet() || region.isFullSet()) continue;
        APInt lo = sx ? region.getSignedMin() : region.getUnsignedMin();
        APInt hi = sx ? region.getSignedMax() : region.getUnsignedMax();
        bool fits = sx ? lo.isSignedIntN(bits) && hi.isSignedIntN(bits)
                       : lo.isIntN(bits) && hi.isIntN(bits);
        if (!fits) continue;
        region = ConstantRange::getNonEmpty(lo.trunc(bits), hi.trunc(bits) + 1);
      }
      r = r.intersectWith(region, ConstantRange::Signed);
    }
  }
  return r;
}

// The range of a loop counter `phi` (issue 31): a `range` loop's counter is a phi of its
// start and `i + step`, the increment marked `nsw` (the counter does not overflow,
// docs/semantics.md §4.3), and LazyValueInfo gives such a phi its whole range, since it does not
// follow the back edge. So `out[idx * C + i]` in `for i in range(tid, C, block_size)` kept
// its negative-index wrap (llm.c's softmax kernels). Here: when every incoming value is either
// `phi + x` (nsw) with `x` non-negative, or a value whose range is known, the phi is at least
// the least of the latter (the nsw steps only go up), and at most the largest value any
// incoming value takes on its edge (LazyValueInfo's range on the edge: a rotated loop's latch
// `if i + step < stop:` bounds the value it sends back). Full when nothing is known.
ConstantRange counter_range(PHINode *phi, RangeQuery &q, unsigned depth) {
  unsigned bits = phi->getType()->getIntegerBitWidth();
  ConstantRange full = ConstantRange::getFull(bits);
  if (depth == 0 || phi->getNumIncomingValues() == 0) return full;
  APInt lo = APInt::getSignedMaxValue(bits), hi = APInt::getSignedMinValue(bits);
  bool start = false;
  for (unsigned n = 0; n < phi->getNumIncomingValues(); ++n) {
    Value *in = phi->getIncomingValue(n);
    BasicBlock *from = phi->getIncomingBlock(n);
    if (in == phi) continue;
    // Asked at the end of the incoming block, where `in` is defined (it need not be
    // defined where `q.at` is).
    Instruction *end = from->getTerminator();
    if (!end || (q.dt && !q.dt->isReachableFromEntry(from))) return full;
    ConstantRange edge = q.lvi.getConstantRangeOnEdge(in, from, phi->getParent(), end);
    RangeQuery there(end, q.lvi, q.dt);
    Value *x = nullptr;
    if (match(in, m_NSWAdd(m_Specific(phi), m_Value(x))) ||
        match(in, m_NSWAdd(m_Value(x), m_Specific(phi)))) {
      if (!range_at(x, there, depth - 1).isAllNonNegative()) return full;
      // The latch's test of the value it sends back, `in < stop`, with `stop`'s range as
      // range_at gives it (LazyValueInfo's edge range takes `stop` as it finds it, and
      // does not see through `sext(C)` with `C > 0` known from a fact).
      ICmpInst::Predicate p;
      Value *bound = nullptr;
      auto *br = dyn_cast<BranchInst>(end);
      if (br && br->isConditional() &&
          match(br->getCondition(), m_ICmp(p, m_Specific(in), m_Value(bound))) &&
          (br->getSuccessor(0) == phi->getParent()) != (br->getSuccessor(1) == phi->getParent())) {
        if (br->getSuccessor(1) == phi->getParent()) p = ICmpInst::getInversePredicate(p);
        edge = edge.intersectWith(
            ConstantRange::makeAllowedICmpRegion(p, range_at(bound, there, depth - 1)),
            ConstantRange::Signed);
      }
      hi = APIntOps::smax(hi, edge.getSignedMax());
      continue;
    }
    ConstantRange s = range_at(in, there, depth - 1).intersectWith(edge, ConstantRange::Signed);
    if (s.isEmptySet()) continue;
    start = true;
    lo = APIntOps::smin(lo, s.getSignedMin());
    hi = APIntOps::smax(hi, s.getSignedMax());
  }
  if (!start || lo.sgt(hi)) return full;
  return ConstantRange::getNonEmpty(lo, hi + 1);
}

// The range of `v` at `q.at`. LazyValueInfo bounds a value by the conditions of the branches
// that lead to `at` only where they name that value; a value defined above the branch is
// not re-evaluated there, so `stop - start - 1`, computed before `if start < stop:` from
// `sext(stop)`, keeps its whole range inside the branch. So the range of a cast or of
// integer arithmetic is also computed from its operands' ranges at `at` (a few levels
// deep), and the two are intersected, and with what the facts at `at` give.
ConstantRange range_at(Value *v, RangeQuery &q, unsigned depth) {
  ConstantRange r = q.lvi.getConstantRange(v, q.at, /*UndefAllowed=*/false);
  if (depth == 0 || r.isSingleElement()) return r;
  if (!q.facts.empty() && !isa<Constant>(v))
    r = r.intersectWith(fact_range(v, q, depth - 1), ConstantRange::Signed);
  if (auto *c = dyn_cast<CastInst>(v); c && c->getSrcTy()->isIntegerTy()) {
    ConstantRange op = range_at(c->getOperand(0), q, depth - 1);
    unsigned bits = v->getType()->getIntegerBitWidth();
    return r.intersectWith(op.castOp(c->getOpcode(), bits));
  }
  if (auto *b = dyn_cast<BinaryOperator>(v)) {
    switch (b->getOpcode()) {
      case Instruction::Add:
      case Instruction::Sub:
      case Instruction::Mul:
      case Instruction::Xor:
      case Instruction::Or:
      case Instruction::And:
        return r.intersectWith(range_at(b->getOperand(0), q, depth - 1)
                                   .binaryOp(b->getOpcode(),
                                             range_at(b->getOperand(1), q, depth - 1)));
      default:
        break;
    }
  }
  if (auto *phi = dyn_cast<PHINode>(v); phi && phi->getType()->isIntegerTy())
    return r.intersectWith(counter_range(phi, q, depth), ConstantRange::Signed);
  return r;
}

bool fits_signed32(Value *v, const DataLayout &dl, RangeQuery *q) {
  if (ComputeNumSignBits(v, dl) >= 33) return true;
  return q && range_at(v, *q, 4).getMinSignedBits() <= 32;
}

bool fits_unsigned32(Value *v, const DataLayout &dl, RangeQuery *q) {
  if (computeKnownBits(v, dl).countMinLeadingZeros() >= 32) return true;
  return q && range_at(v, *q, 4).getActiveBits() <= 32;
}

Value *expand_floor(CallInst *call, LazyValueInfo *lvi, const DominatorTree *dt) {
  const DataLayout &dl = call->getModule()->getDataLayout();
  bool div = call->getCalledFunction()->getName() == kFloorDiv;
  Value *x = call->getArgOperand(0), *y = call->getArgOperand(1);
  std::optional<RangeQuery> query;
  if (lvi) query.emplace(call, *lvi, dt);
  RangeQuery *rq = query ? &*query : nullptr;
  IRBuilder<> b(call);
  Type *i64 = b.getInt64Ty(), *i32 = b.getInt32Ty();
  // A non-negative `x` takes the unsigned division even where it also fits `int32`: a
  // signed one would take |x| and fix the signs again.
  bool ys = fits_signed32(y, dl, rq);
  bool xu = fits_unsigned32(x, dl, rq);
  bool xs = ys && !xu && fits_signed32(x, dl, rq);
  bool yu = !ys && xu && fits_unsigned32(y, dl, rq);
  if (xs) {
    Value *x32 = b.CreateTrunc(x, i32), *y32 = b.CreateTrunc(y, i32);
    Value *zero = b.getInt32(0), *one = b.getInt32(1);
    Value *y_zero = b.CreateICmpEQ(y32, zero);
    Value *m1 = b.CreateICmpEQ(y32, b.getInt32(-1));
    Value *y1 = b.CreateSelect(b.CreateOr(y_zero, m1), one, y32);
    Value *q = b.CreateSDiv(x32, y1), *r = b.CreateSRem(x32, y1);
    Value *adjust = b.CreateAnd(b.CreateICmpNE(r, zero),
                                b.CreateICmpSLT(b.CreateXor(r, y1), zero));
    if (div) {
      Value *fq = b.CreateSExt(b.CreateSelect(adjust, b.CreateSub(q, one), q), i64);
      fq = b.CreateSelect(m1, b.CreateNeg(x), fq);
      return b.CreateSelect(y_zero, ConstantInt::get(i64, 0), fq);
    }
    Value *fr = b.CreateSelect(adjust, b.CreateAdd(r, y1), r);
    return b.CreateSExt(b.CreateSelect(y_zero, zero, fr), i64);
  }
  if (xu && (ys || yu)) {
    Value *x32 = b.CreateTrunc(x, i32), *y32 = b.CreateTrunc(y, i32);
    Value *zero = b.getInt32(0), *one = b.getInt32(1);
    Value *y_zero = b.CreateICmpEQ(y32, zero);
    // |y| as an unsigned 32-bit value (2^31 for INT32_MIN); 1 for y == 0.
    Value *neg = ys ? b.CreateICmpSLT(y32, zero) : nullptr;
    Value *u = neg ? b.CreateSelect(neg, b.CreateNeg(y32), y32) : y32;
    u = b.CreateSelect(y_zero, one, u);
    Value *q = b.CreateUDiv(x32, u), *r = b.CreateURem(x32, u);
    if (div) {
      Value *fq = b.CreateZExt(q, i64);
      if (neg) {
        // y < 0: floor(x / y) = -(q + (r != 0)), at 64 bits (q may be 2^32 - 1).
        Value *up = b.CreateZExt(b.CreateICmpNE(r, zero), i64);
        fq = b.CreateSelect(neg, b.CreateNeg(b.CreateAdd(fq, up)), fq);
      }
      return b.CreateSelect(y_zero, ConstantInt::get(i64, 0), fq);
    }
    Value *fr = r;
    if (neg) {
      // y < 0: the remainder takes y's sign: r - |y| when r != 0, in (y, 0).
      Value *adjust = b.CreateAnd(neg, b.CreateICmpNE(r, zero));
      fr = b.CreateSelect(adjust, b.CreateSub(r, u), r);
      fr = b.CreateSExt(b.CreateSelect(y_zero, zero, fr), i64);
    } else {
      // 0 <= r < y < 2^32.
      fr = b.CreateZExt(b.CreateSelect(y_zero, zero, fr), i64);
    }
    return fr;
  }
  Value *zero = ConstantInt::get(i64, 0), *one = ConstantInt::get(i64, 1);
  if (rq && range_at(x, *rq, 4).isAllNonNegative() && range_at(y, *rq, 4).getSignedMin().sgt(0))
    // 0 <= x and 0 < y: no correction and no zero divisor.
    return div ? b.CreateUDiv(x, y) : b.CreateURem(x, y);
  Value *y_zero = b.CreateICmpEQ(y, zero);
  Value *m1 = b.CreateICmpEQ(y, ConstantInt::getSigned(i64, -1));
  Value *y1 = b.CreateSelect(b.CreateOr(y_zero, m1), one, y);
  Value *q = b.CreateSDiv(x, y1), *r = b.CreateSRem(x, y1);
  Value *adjust =
      b.CreateAnd(b.CreateICmpNE(r, zero), b.CreateICmpSLT(b.CreateXor(r, y1), zero));
  Value *res;
  if (div) {
    res = b.CreateSelect(adjust, b.CreateSub(q, one), q);
    res = b.CreateSelect(m1, b.CreateNeg(x), res);
  } else {
    res = b.CreateSelect(adjust, b.CreateAdd(r, y1), r);
  }
  return b.CreateSelect(y_zero, zero, res);
}

// Expands every floor-division call of `f`, producers before users (reverse post-order), so
// that a remainder expanded at 32 bits is seen as such by the division that uses it.
bool expand_floor_divs(Function &f, LazyValueInfo *lvi, const DominatorTree *dt) {
  SmallVector<CallInst *, 8> calls;
  ReversePostOrderTraversal<Function *> rpo(&f);
  for (BasicBlock *bb : rpo)
    for (Instruction &inst : *bb)
      if (auto *c = dyn_cast<CallInst>(&inst); c && is_floor_fn(c->getCalledFunction()))
        calls.push_back(c);
  // Calls in unreachable blocks, which the traversal does not visit.
  for (BasicBlock &bb : f)
    for (Instruction &inst : bb)
      if (auto *c = dyn_cast<CallInst>(&inst);
          c && is_floor_fn(c->getCalledFunction()) && !is_contained(calls, c))
        calls.push_back(c);
  for (CallInst *c : calls) {
    Value *v = expand_floor(c, lvi, dt);
    v->takeName(c);
    c->replaceAllUsesWith(v);
    c->eraseFromParent();
  }
  return !calls.empty();
}

bool has_floor_calls(const Function &f) {
  for (const Function &g : *f.getParent())
    if (is_floor_fn(&g) && !g.use_empty())
      for (const User *u : g.users())
        if (auto *c = dyn_cast<CallInst>(u); c && c->getFunction() == &f) return true;
  return false;
}

struct FloorDivPass : PassInfoMixin<FloorDivPass> {
  PreservedAnalyses run(Function &f, FunctionAnalysisManager &am) {
    if (!has_floor_calls(f)) return PreservedAnalyses::all();
    LazyValueInfo &lvi = am.getResult<LazyValueAnalysis>(f);
    expand_floor_divs(f, &lvi, &am.getResult<DominatorTreeAnalysis>(f));
    PreservedAnalyses pa;
    pa.preserveSet<CFGAnalyses>();
    return pa;
  }
  static bool isRequired() { return false; }
};

// Sign tests that the conditions on the way to them decide (issue 31). A Python index may be
// negative, so an index the checker cannot prove non-negative (docs/semantics.md §5.1) is
// wrapped: `i + (i < 0 ? shape : 0)`, which InstCombine turns into
// `i + ((i >> 63) & shape)`, three or four SASS instructions for each access and a 64-bit
// address computed twice. Often the program's own bounds test proves the index
// non-negative: CUDA samples' `copySharedMem` reads `idata[index + i * width]` with
// `index = xIndex + width * yIndex` under `if xIndex < width and yIndex < height:`, where
// `width > xIndex >= 0`, so the index is non-negative; a loop
// `for so in range(0, C, 32):` proves `C > 0` in its body. The checker's rules do not look at
// branch conditions, and LazyValueInfo does not re-evaluate `index`, defined above the
// branch, with what the branch says about `width`. This pass, run after each InstCombine
// next to FloorDivPass, computes the range of the operand of each comparison with a constant
// (`x < 0`, and `x < -16` once an unrolled loop has folded an offset into it)
// and of each `x >> (bits - 1)` with `range_at` and the facts at that instruction, and
// replaces the ones the range decides by their constant. Nothing observable changes: the
// replaced value is the one the instruction computes on every path that reaches it.
// The sign tests of `f` (of the blocks in `only`, when given) that the ranges decide, each
// with its constant.
// How deep `range_at` looks for a sign test: 5 reaches a loop counter's start through a
// fact about the loop's bound (`idx * C + i` with `i < C` in `range(tid, C, ...)`).
constexpr unsigned kSignTestDepth = 5;
void decided_sign_tests(Function &f, LazyValueInfo &lvi, const DominatorTree &dt,
                        const SmallPtrSetImpl<BasicBlock *> *only,
                        SmallVectorImpl<std::pair<Instruction *, Constant *>> &folds) {
  for (BasicBlock &bb : f) {
    if (only && !only->contains(&bb)) continue;
    for (Instruction &inst : bb) {
      if (auto *c = dyn_cast<ICmpInst>(&inst)) {
        if (!c->getOperand(0)->getType()->isIntegerTy()) continue;
        auto *k = dyn_cast<ConstantInt>(c->getOperand(1));
        if (!k || isa<Constant>(c->getOperand(0))) continue;
        RangeQuery q(c, lvi, &dt);
        ConstantRange r = range_at(c->getOperand(0), q, kSignTestDepth);
        ConstantRange kr(k->getValue());
        if (r.icmp(c->getPredicate(), kr))
          folds.push_back({c, ConstantInt::getTrue(c->getType())});
        else if (r.icmp(c->getInversePredicate(), kr))
          folds.push_back({c, ConstantInt::getFalse(c->getType())});
        continue;
      }
      auto *b = dyn_cast<BinaryOperator>(&inst);
      if (!b || b->getOpcode() != Instruction::AShr || !b->getType()->isIntegerTy()) continue;
      auto *k = dyn_cast<ConstantInt>(b->getOperand(1));
      unsigned bits = b->getType()->getIntegerBitWidth();
      if (!k || k->getValue() != bits - 1 || isa<Constant>(b->getOperand(0))) continue;
      RangeQuery q(b, lvi, &dt);
      ConstantRange r = range_at(b->getOperand(0), q, kSignTestDepth);
      if (r.isAllNonNegative())
        folds.push_back({b, ConstantInt::get(b->getType(), 0)});
      else if (r.isAllNegative())
        folds.push_back({b, ConstantInt::getSigned(b->getType(), -1)});
    }
  }
}

bool fold_sign_tests(Function &f, LazyValueInfo &lvi, const DominatorTree &dt,
                     const SmallPtrSetImpl<BasicBlock *> *only = nullptr,
                     const LoopInfo *loops = nullptr, bool *in_loop = nullptr) {
  SmallVector<std::pair<Instruction *, Constant *>, 8> folds;
  decided_sign_tests(f, lvi, dt, only, folds);
  for (auto [inst, value] : folds) {
    if (loops && in_loop) {
      // A test in a loop, or one hoisted out of it whose value the loop uses.
      bool used_in_loop = loops->getLoopFor(inst->getParent());
      for (User *u : inst->users())
        if (auto *ui = dyn_cast<Instruction>(u); ui && loops->getLoopFor(ui->getParent()))
          used_in_loop = true;
      if (used_in_loop) *in_loop = true;
    }
    inst->replaceAllUsesWith(value);
    inst->eraseFromParent();
  }
  return !folds.empty();
}

struct SignTestPass : PassInfoMixin<SignTestPass> {
  PreservedAnalyses run(Function &f, FunctionAnalysisManager &am) {
    LazyValueInfo &lvi = am.getResult<LazyValueAnalysis>(f);
    if (!fold_sign_tests(f, lvi, am.getResult<DominatorTreeAnalysis>(f)))
      return PreservedAnalyses::all();
    PreservedAnalyses pa;
    pa.preserveSet<CFGAnalyses>();
    return pa;
  }
  static bool isRequired() { return false; }
};

// Kernels versioned on the signs of their parameters (issue 31). A CUDA programmer's index
// arithmetic multiplies thread indices by `int` shapes: `idata[xIndex + width * yIndex]`,
// `idx // (NH * N * d)`. In C the shapes' signs do not matter (`int` arithmetic, truncating
// division). In Python they do: an index that may be negative wraps (§5.1) and `//` and `%`
// floor, so where `width` may be negative every access pays the wrap (3-4 SASS
// instructions) and every division its floor corrections, and no bounds test in the
// program says otherwise (CUDA samples' transpose kernels, llm.c's permute and encoder
// kernels: up to 2.6x nvcc's SASS instructions). So, once the function has been simplified
// (loops fully unrolled, the divisions expanded by FloorDivPass), this pass looks at every
// sign test SignTestPass cannot decide and at what would decide it: values that depend only
// on the parameters (`width`, `NH * N * d`, `16 * width`), non-negative (or, for a test
// against 0 such as a divisor's, positive). If there are some (at most 8), it emits the
// function twice: `if width >= 0 and ...:` a copy in which those values are computed once
// at the top and the tests are decided, else the original. The condition depends only on
// parameters, so every thread of the grid takes the same copy (a barrier in the body is
// reached by all or none), and both copies compute the same results: the second is the
// function as it was, and in the first only tests that the condition decides were replaced
// by their value. When the condition decides no test, the copy is removed again.
constexpr unsigned kMaxVersionLeaves = 8;
constexpr unsigned kMaxVersionedInstructions = 4000;

// Whether `v` is computed from the function's parameters and constants alone, by operations
// that cannot trap (no division) and whose operands are in range (constant shift amounts).
bool parameter_value(Value *v, unsigned depth) {
  if (isa<ConstantInt>(v)) return true;
  if (auto *a = dyn_cast<Argument>(v)) return a->getType()->isIntegerTy();
  if (depth == 0) return false;
  auto *i = dyn_cast<Instruction>(v);
  if (!i || !i->getType()->isIntegerTy()) return false;
  if (auto *e = dyn_cast<ExtractValueInst>(i)) return isa<Argument>(e->getAggregateOperand());
  if (auto *c = dyn_cast<CastInst>(i)) {
    if (!c->getSrcTy()->isIntegerTy()) return false;
  } else if (auto *b = dyn_cast<BinaryOperator>(i)) {
    switch (b->getOpcode()) {
      case Instruction::Add:
      case Instruction::Sub:
      case Instruction::Mul:
      case Instruction::And:
      case Instruction::Or:
      case Instruction::Xor:
        break;
      case Instruction::Shl:
      case Instruction::LShr:
      case Instruction::AShr:
        if (!isa<ConstantInt>(b->getOperand(1))) return false;
        break;
      default:
        return false;
    }
  } else {
    return false;
  }
  for (Value *op : i->operands())
    if (!parameter_value(op, depth - 1)) return false;
  return true;
}

// The parameter values whose signs would make `x` non-negative: `x` itself when it is one,
// else those of the operands of the sums, products and extensions that make it up. False
// when some part is neither known non-negative nor a parameter value.
bool sign_leaves(Value *x, RangeQuery &q, SmallVectorImpl<Value *> &out, unsigned depth) {
  if (isa<Constant>(x)) return isa<ConstantInt>(x) && !cast<ConstantInt>(x)->isNegative();
  if (range_at(x, q, 3).isAllNonNegative()) return true;
  if (parameter_value(x, 6)) {
    out.push_back(x);
    return true;
  }
  if (depth == 0) return false;
  if (auto *c = dyn_cast<CastInst>(x)) {
    if (c->getOpcode() == Instruction::SExt || c->getOpcode() == Instruction::Trunc)
      return sign_leaves(c->getOperand(0), q, out, depth - 1);
    return false;
  }
  if (auto *b = dyn_cast<BinaryOperator>(x)) {
    switch (b->getOpcode()) {
      case Instruction::Add:
      case Instruction::Mul:
      case Instruction::Or:
      case Instruction::Shl:
      case Instruction::LShr:
      case Instruction::UDiv:
      case Instruction::URem:
        return sign_leaves(b->getOperand(0), q, out, depth - 1) &&
               sign_leaves(b->getOperand(1), q, out, depth - 1);
      default:
        return false;
    }
  }
  return false;
}

// The leaves of every undecided sign test of `f`, with whether each must be positive (a
// test `x == 0` or `x != 0`, a divisor's) rather than non-negative.
void version_leaves(Function &f, LazyValueInfo &lvi, const DominatorTree &dt,
                    SmallVectorImpl<std::pair<Value *, bool>> &leaves) {
  auto add = [&](Instruction *at, Value *x, bool strict) {
    RangeQuery q(at, lvi, &dt);
    SmallVector<Value *, 4> found;
    if (!sign_leaves(x, q, found, 6)) return;
    for (Value *v : found) {
      auto it = llvm::find_if(leaves, [&](auto &l) { return l.first == v; });
      if (it != leaves.end())
        it->second |= strict;
      else if (leaves.size() < kMaxVersionLeaves)
        leaves.push_back({v, strict});
    }
  };
  for (BasicBlock &bb : f)
    for (Instruction &inst : bb) {
      if (auto *c = dyn_cast<ICmpInst>(&inst)) {
        auto *k = dyn_cast<ConstantInt>(c->getOperand(1));
        if (!k || !c->getOperand(0)->getType()->isIntegerTy() || isa<Constant>(c->getOperand(0)))
          continue;
        // Tests that a non-negative (or positive) value decides: `x < k` or `x >= k` for
        // k <= 0, `x > k` or `x <= k` for k < 0, and `x == 0`, `x != 0`.
        ICmpInst::Predicate p = c->getPredicate();
        const APInt &kv = k->getValue();
        bool eq = c->isEquality() && kv.isZero();
        bool lt = (p == ICmpInst::ICMP_SLT || p == ICmpInst::ICMP_SGE) && kv.isNonPositive();
        bool gt = (p == ICmpInst::ICMP_SGT || p == ICmpInst::ICMP_SLE) && kv.isNegative();
        if (eq || lt || gt) add(c, c->getOperand(0), eq);
        continue;
      }
      auto *b = dyn_cast<BinaryOperator>(&inst);
      if (!b || b->getOpcode() != Instruction::AShr) continue;
      auto *k = dyn_cast<ConstantInt>(b->getOperand(1));
      if (k && k->getValue() == b->getType()->getIntegerBitWidth() - 1)
        add(b, b->getOperand(0), false);
    }
}

// A copy of the parameter value `v` at `b`'s insertion point (its operations without the
// flags that could make it poison where the original was not evaluated).
Value *materialize(Value *v, IRBuilder<> &b, DenseMap<Value *, Value *> &done) {
  if (!isa<Instruction>(v)) return v;
  if (auto it = done.find(v); it != done.end()) return it->second;
  auto *i = cast<Instruction>(v);
  Instruction *c = i->clone();
  c->dropPoisonGeneratingFlags();
  c->dropPoisonGeneratingMetadata();
  for (unsigned n = 0; n < c->getNumOperands(); ++n)
    c->setOperand(n, materialize(i->getOperand(n), b, done));
  b.Insert(c);
  done[v] = c;
  return c;
}

// Whether `f` is a kernel (`!nvvm.annotations` names it `"kernel"`): only kernels are
// versioned, whose parameters come from the launch; a `@func` is inlined into its callers,
// where it is versioned with them, or called, where the caller's copy would not know.
bool is_kernel(const Function &f) {
  const NamedMDNode *md = f.getParent()->getNamedMetadata("nvvm.annotations");
  if (!md) return false;
  for (const MDNode *n : md->operands()) {
    if (n->getNumOperands() < 2) continue;
    auto *v = dyn_cast_or_null<ValueAsMetadata>(n->getOperand(0).get());
    auto *s = dyn_cast_or_null<MDString>(n->getOperand(1).get());
    if (v && v->getValue() == &f && s && s->getString() == "kernel") return true;
  }
  return false;
}

// Whether `f` calls a function that is not an LLVM intrinsic or inline assembly (a `@func`
// kept out of line, a device-side launch, recursion): such kernels are left as they are,
// since copying their calls would copy their call sites' stack frames and parameter set-up.
bool has_calls(const Function &f) {
  for (const BasicBlock &bb : f)
    for (const Instruction &inst : bb)
      if (auto *c = dyn_cast<CallBase>(&inst); c && !c->isInlineAsm()) {
        const Function *callee = c->getCalledFunction();
        if (!callee || !callee->isIntrinsic()) return true;
      }
  return false;
}

bool version_on_signs(Function &f, FunctionAnalysisManager &am) {
  if (f.isDeclaration() || f.hasFnAttribute("pydevice-sign-versioned")) return false;
  f.addFnAttr("pydevice-sign-versioned");
  if (!is_kernel(f) || has_calls(f) || f.getInstructionCount() > kMaxVersionedInstructions)
    return false;
  SmallVector<std::pair<Value *, bool>, 8> leaves;
  {
    LazyValueInfo &lvi = am.getResult<LazyValueAnalysis>(f);
    version_leaves(f, lvi, am.getResult<DominatorTreeAnalysis>(f), leaves);
  }
  if (leaves.empty()) return false;
  BasicBlock *entry = &f.getEntryBlock();
  SmallVector<BasicBlock *, 16> original;
  for (BasicBlock &bb : f) original.push_back(&bb);
  ValueToValueMapTy vmap;
  SmallVector<BasicBlock *, 16> copy;
  for (BasicBlock *bb : original) {
    BasicBlock *c = CloneBasicBlock(bb, vmap, ".pos", &f);
    vmap[bb] = c;
    copy.push_back(c);
  }
  LLVMContext &ctx = f.getContext();
  BasicBlock *dispatch = BasicBlock::Create(ctx, "signs", &f, entry);
  IRBuilder<> b(dispatch);
  DenseMap<Value *, Value *> done;
  Value *cond = nullptr;
  for (auto [v, strict] : leaves) {
    Value *d = materialize(v, b, done);
    if (isa<Instruction>(v)) vmap[v] = d;
    Value *zero = ConstantInt::get(v->getType(), 0);
    Value *c = strict ? b.CreateICmpSGT(d, zero) : b.CreateICmpSGE(d, zero);
    cond = cond ? b.CreateAnd(cond, c) : c;
  }
  BranchInst *br = b.CreateCondBr(cond, cast<BasicBlock>(vmap[entry]), entry);
  remapInstructionsInBlocks(copy, vmap);
  // Static allocas stay in the entry block (SROA looks for them only there).
  for (BasicBlock *bb : {entry, cast<BasicBlock>(vmap[entry])})
    for (Instruction &inst : make_early_inc_range(*bb))
      if (auto *a = dyn_cast<AllocaInst>(&inst); a && a->isStaticAlloca())
        a->moveBefore(dispatch->getFirstNonPHI());
  am.invalidate(f, PreservedAnalyses::none());
  SmallPtrSet<BasicBlock *, 16> in_copy(copy.begin(), copy.end());
  bool folded = false, folded_in_loop = false, has_loops = false;
  for (int round = 0; round < 4; ++round) {
    DominatorTree dt(f);
    LoopInfo loops(dt);
    has_loops = !loops.empty();
    LazyValueInfo &lvi = am.getResult<LazyValueAnalysis>(f);
    bool any = fold_sign_tests(f, lvi, dt, &in_copy, &loops, &folded_in_loop);
    am.invalidate(f, PreservedAnalyses::none());
    if (!any) break;
    folded = true;
    for (BasicBlock *bb : copy) SimplifyInstructionsInBlock(bb);
  }
  // In a function with loops, a copy whose decided tests all lie outside them (and whose
  // values no loop uses: a floor division's divisor test hoisted out of a grid-stride loop
  // counts as in it) saves a few instructions a thread, once, for twice the code and the
  // registers of the larger copy. On the H200 (bench/corpus results 2026-11-29 vs -29b)
  // such copies made llm.c's attention_forward_kernel2 1.010x -> 1.105x nvcc (only its tile
  // slices' clamps were decided; 40 -> 56 registers, 1112 -> 2040 SASS instructions),
  // attention_value_kernel1 1.135x -> 1.197x, layernorm_forward_kernel3 1.016x -> 1.048x.
  if (folded && has_loops && !folded_in_loop) folded = false;
  if (folded) {
    // Marked for pydevice_optimizer_run: a function with two copies is no longer what the
    // straight-line code generator's shortcuts were checked on (keep_codegen_pass).
    f.addFnAttr("pydevice-sign-fast-copy");
    return true;
  }
  // Nothing decided (or nothing in a loop): back to the original function.
  br->eraseFromParent();
  BranchInst::Create(entry, dispatch);
  DeleteDeadBlocks(copy);
  for (Instruction &inst : make_early_inc_range(reverse(*dispatch)))
    if (isInstructionTriviallyDead(&inst)) inst.eraseFromParent();
  return true;
}

// The function attribute SignVersionPass leaves on a function whose fast copy it kept
// (version_on_signs's own "pydevice-sign-versioned" marks every function it looked at).
constexpr const char *kVersioned = "pydevice-sign-fast-copy";

struct SignVersionPass : PassInfoMixin<SignVersionPass> {
  PreservedAnalyses run(Function &f, FunctionAnalysisManager &am) {
    if (!version_on_signs(f, am)) return PreservedAnalyses::all();
    return PreservedAnalyses::none();
  }
  static bool isRequired() { return false; }
};

// How run-time-stride loops are unrolled (`LoopForm::RuntimeStride` in the IR: a `range`
// loop whose step is known only at run time, `for i in range(tid, n, grid_size)`). The
// emitter marks such a loop's ID with `pydevice.loop.runtime_stride`; this pass, run just
// before LLVM's loop unroller, replaces the mark: a small loop gets `llvm.loop.unroll.count`
// 4, so LLVM unrolls it 4 times and marks the result unrolled (`llvm.loop.unroll.disable`,
// which NVPTX prints as `.pragma "nounroll"`); a large one keeps LLVM's own choice. Left to
// LLVM, a small one was unrolled 8 times (NVPTX's default run-time count), and ptxas, which
// can count the iterations of LLVM's unrolled loop, unrolled it 4 times more; its schedule of
// the 32 copies issued each load shortly before the add that used it. nvcc's (NVVM's) copy is
// unrolled 4 times and not again, its 4 loads issued together: `reduce_block` 2% faster,
// against cupyx.jit's 92.2 µs (bench/NOTES.md, "Session 18: grid-stride loops"). Small:
// the 4 copies within the partial-unroll threshold set below (300), as LLVM would require.
constexpr unsigned kRuntimeStrideUnroll = 4;
constexpr unsigned kPartialUnrollThreshold = 300;  // `unroll-partial-threshold`, set below
constexpr unsigned kRuntimeStrideMaxBody = kPartialUnrollThreshold / kRuntimeStrideUnroll;

struct RuntimeStrideUnrollPass : PassInfoMixin<RuntimeStrideUnrollPass> {
  PreservedAnalyses run(Function &f, FunctionAnalysisManager &am) {
    LLVMContext &ctx = f.getContext();
    LoopInfo &loops = am.getResult<LoopAnalysis>(f);
    for (Loop *loop : loops.getLoopsInPreorder()) {
      MDNode *id = loop->getLoopID();
      if (!id || !findOptionMDForLoopID(id, "pydevice.loop.runtime_stride")) continue;
      unsigned size = 0;
      for (BasicBlock *bb : loop->blocks())
        for (Instruction &inst : *bb)
          if (!isa<PHINode>(inst) && !inst.isDebugOrPseudoInst()) ++size;
      // The new ID: the old one's operands but the mark, and the count if the loop is small.
      SmallVector<Metadata *, 4> ops{nullptr};
      for (unsigned i = 1; i < id->getNumOperands(); ++i) {
        auto *op = dyn_cast<MDNode>(id->getOperand(i));
        auto *name = op && op->getNumOperands() ? dyn_cast<MDString>(op->getOperand(0)) : nullptr;
        if (!name || name->getString() != "pydevice.loop.runtime_stride")
          ops.push_back(id->getOperand(i));
      }
      if (loop->isInnermost() && size <= kRuntimeStrideMaxBody)
        ops.push_back(MDNode::get(
            ctx, {MDString::get(ctx, "llvm.loop.unroll.count"),
                  ConstantAsMetadata::get(ConstantInt::get(Type::getInt32Ty(ctx),
                                                           kRuntimeStrideUnroll))}));
      MDNode *next = MDNode::getDistinct(ctx, ops);
      next->replaceOperandWith(0, next);
      loop->setLoopID(next);
    }
    return PreservedAnalyses::all();
  }
  static bool isRequired() { return false; }
};

// Per-thread arrays in registers (issue 31). A `local_array` is an `alloca`; SROA turns it
// into registers only when every access has a constant index, which, for an array indexed
// by a loop variable (`for d in range(64): acc[d] += p * v[j, d]`), holds only once the loop
// is fully unrolled. LLVM's full unroller counts the unrolled size against `unroll-threshold`
// (400, set below) without crediting what SROA will remove (its "unrolled cost" analysis runs
// only for trip counts up to 10), so a 64-step loop of 8 instructions stayed a loop and the
// array stayed in local memory: the causal-attention kernel of issue 31 had a 640-byte stack
// frame and ran 6.4x slower than NVRTC, whose NVVM unrolls such loops and keeps the arrays in
// registers. (AMDGPU's TTI does the same: `amdgpu-unroll-threshold-private`.) This loop pass,
// run just before the full unroller of the function simplification pipeline, marks for full
// unrolling (`llvm.loop.unroll.full`) every loop that
//   - has a trip count known at compile time, at most kLocalArrayMaxTrip;
//   - loads or stores through an address into an `alloca` (of at most kLocalArrayMaxBytes,
//     the size that can live in registers) that changes with the loop's iterations;
//   - unrolled, stays within kLocalArrayUnrollBudget instructions;
//   - holds no `llvm.loop.unroll.*` request already.
// The unroller then unrolls it (nested loops innermost first: an outer loop whose accesses
// are still indexed by its own variable is marked in turn), and the SROA that follows the loop
// passes scalar-replaces the array. Unrolling a constant-trip loop changes no result.
constexpr unsigned kLocalArrayMaxTrip = 256;
constexpr uint64_t kLocalArrayMaxBytes = 1024;  // 256 32-bit registers, the most a thread has
constexpr unsigned kLocalArrayUnrollBudget = 4096;

// The alloca that `ptr` addresses, if it is one of at most kLocalArrayMaxBytes.
const AllocaInst *small_alloca(const Value *ptr, const DataLayout &dl) {
  auto *a = dyn_cast<AllocaInst>(getUnderlyingObject(ptr, /*MaxLookup=*/12));
  if (!a) return nullptr;
  std::optional<TypeSize> size = a->getAllocationSize(dl);
  if (!size || size->isScalable() || size->getFixedValue() > kLocalArrayMaxBytes) return nullptr;
  return a;
}

bool has_unroll_request(MDNode *id) {
  if (!id) return false;
  for (unsigned i = 1; i < id->getNumOperands(); ++i) {
    auto *op = dyn_cast<MDNode>(id->getOperand(i));
    auto *name = op && op->getNumOperands() ? dyn_cast<MDString>(op->getOperand(0)) : nullptr;
    if (name && name->getString().starts_with("llvm.loop.unroll.")) return true;
  }
  return false;
}

struct LocalArrayUnrollPass : PassInfoMixin<LocalArrayUnrollPass> {
  PreservedAnalyses run(Loop &loop, LoopAnalysisManager &, LoopStandardAnalysisResults &ar,
                        LPMUpdater &) {
    if (has_unroll_request(loop.getLoopID())) return PreservedAnalyses::all();
    unsigned trips = ar.SE.getSmallConstantTripCount(&loop);
    if (trips == 0 || trips > kLocalArrayMaxTrip) return PreservedAnalyses::all();
    const DataLayout &dl = loop.getHeader()->getModule()->getDataLayout();
    unsigned size = 0;
    bool indexes_local = false;
    for (BasicBlock *bb : loop.blocks())
      for (Instruction &inst : *bb) {
        if (isa<PHINode>(inst) || inst.isDebugOrPseudoInst()) continue;
        ++size;
        if (indexes_local) continue;
        const Value *ptr = getLoadStorePointerOperand(&inst);
        if (!ptr || !small_alloca(ptr, dl) || !ar.SE.isSCEVable(ptr->getType())) continue;
        indexes_local = !ar.SE.isLoopInvariant(ar.SE.getSCEV(const_cast<Value *>(ptr)), &loop);
      }
    if (!indexes_local || uint64_t(size) * trips > kLocalArrayUnrollBudget)
      return PreservedAnalyses::all();
    LLVMContext &ctx = loop.getHeader()->getContext();
    SmallVector<Metadata *, 4> ops{nullptr};
    if (MDNode *id = loop.getLoopID())
      for (unsigned i = 1; i < id->getNumOperands(); ++i) ops.push_back(id->getOperand(i));
    ops.push_back(MDNode::get(ctx, {MDString::get(ctx, "llvm.loop.unroll.full")}));
    MDNode *next = MDNode::getDistinct(ctx, ops);
    next->replaceOperandWith(0, next);
    loop.setLoopID(next);
    // Only metadata changed: every analysis still holds.
    return PreservedAnalyses::all();
  }
  static bool isRequired() { return false; }
};

// Keeps a bit test a bit test when it meets another comparison in an `xor` (Python's `==`
// between two `bool`s: `(a > b) == up` with `up = (i & k) == 0`). The target-independent
// instruction selector rewrites `(x & 2^c) != 0` as `(x >> c) & 1` compared with 1, which
// ptxas turns into a shift, an AND and a compare (SASS `SHF`, `LOP3`, `ISETP`) with the bit
// held in a register; `(x & 2^c) == 0` is left alone and becomes one `LOP3.LUT P` that sets a
// predicate. So, after optimization, `xor (icmp ne (and x, 2^c), 0), (icmp P a, b)` with
// both compares used only there is rewritten as `xor (icmp eq (and x, 2^c), 0), (icmp !P a,
// b)`: the same value (both operands negated), which nothing after this point folds back.
// In bitonic_sort this is two SASS instructions of each of its 66 steps (bench/NOTES.md,
// session 16).
bool keep_bit_tests(Function &f) {
  bool changed = false;
  for (BasicBlock &bb : f)
    for (Instruction &inst : bb) {
      auto *x = dyn_cast<BinaryOperator>(&inst);
      if (!x || x->getOpcode() != Instruction::Xor || !x->getType()->isIntegerTy(1)) continue;
      for (unsigned k = 0; k < 2; ++k) {
        auto *test = dyn_cast<ICmpInst>(x->getOperand(k));
        auto *other = dyn_cast<ICmpInst>(x->getOperand(1 - k));
        if (!test || !other || test == other || !test->hasOneUse() || !other->hasOneUse() ||
            test->getPredicate() != ICmpInst::ICMP_NE)
          continue;
        auto *zero = dyn_cast<ConstantInt>(test->getOperand(1));
        auto *mask = dyn_cast<BinaryOperator>(test->getOperand(0));
        if (!zero || !zero->isZero() || !mask || mask->getOpcode() != Instruction::And) continue;
        auto *bit = dyn_cast<ConstantInt>(mask->getOperand(1));
        if (!bit || !bit->getValue().isPowerOf2()) continue;
        test->setPredicate(ICmpInst::ICMP_EQ);
        other->setPredicate(other->getInversePredicate());
        changed = true;
        break;
      }
    }
  return changed;
}

// The optimizer's pipeline for a loop-free leaf module. LLVM's O3 function simplification
// pipeline runs many of its passes twice or three times so that each round can clean up
// after loop transforms (rotation, unswitching, unrolling) and the inliner; with no loop
// and no call there is nothing for the later rounds to find. This is that pipeline's first
// round, in its order, with GVN from the second and its closing CFG simplification, then the
// two passes of the module optimization pipeline that act on straight-line code (alignment
// inference, div/rem pairing). Passes left out: the second and third rounds of SROA,
// InstCombine, jump threading, correlated value propagation and CFG simplification, the
// loop passes, and SCCP, bit-tracking and aggressive dead-code elimination, memcpy
// optimization and merged load/store motion; on every loop-free fixture the PTX was the
// same as with the whole pipeline, for ~9% less work on a small kernel. Since session 18
// also constraint elimination, dead-store elimination and the closing InstCombine (with
// its OneExtensionPass): without them some fixtures' PTX changes (a `cvt` or an `and` left
// in, registers renumbered) but `ptxas -O3` makes byte-identical cubins of every fixture
// and benchmark kernel (scripts/sass_diff.sh; bench/NOTES.md, session 18), for another ~5%
// of a small kernel's compile. (They could still find something in some other program, as
// the passes of the later rounds could: a comparison implied by an earlier one, a store
// overwritten further down; ptxas is then left to do it.) Tried and kept, because leaving
// them out changes some fixture's SASS: each of the others but jump threading and div/rem
// pairing, which cost nothing measurable. mod.rs's tests check that this pipeline's PTX is
// no longer than the whole pipeline's.
FunctionPassManager straight_line_pipeline() {
  SimplifyCFGOptions keep_shape;
  keep_shape.convertSwitchRangeToICmp(true);
  SimplifyCFGOptions merge = keep_shape;
  merge.hoistCommonInsts(true).sinkCommonInsts(true);
  FunctionPassManager f;
  f.addPass(SROAPass(SROAOptions::ModifyCFG));
  f.addPass(EarlyCSEPass(/*UseMemorySSA=*/true));
  f.addPass(SpeculativeExecutionPass(/*OnlyIfDivergentTarget=*/true));
  f.addPass(JumpThreadingPass());
  f.addPass(CorrelatedValuePropagationPass());
  f.addPass(SimplifyCFGPass(keep_shape));
  // Before the pipeline's only InstCombine, which then folds the expansion (its corrections
  // for a constant divisor).
  f.addPass(FloorDivPass());
  f.addPass(SignTestPass());
  f.addPass(InstCombinePass());
  f.addPass(OneExtensionPass());
  f.addPass(SignVersionPass());
  f.addPass(AggressiveInstCombinePass());
  f.addPass(ReassociatePass());
  f.addPass(VectorCombinePass(/*TryEarlyFoldsOnly=*/true));
  f.addPass(GVNPass());
  f.addPass(SimplifyCFGPass(merge));
  f.addPass(InferAlignmentPass());
  f.addPass(DivRemPairsPass());
  return f;
}

// Three of LLVM's loop heuristics, set as nvcc's NVVM behaves, so that loops are unrolled as
// nvcc unrolls them (bench/NOTES.md, session 16). All are process-wide options (LLVM has no
// per-pass-manager setting, and LLVM is linked statically, so the setting is pydevice's own);
// they are set once, and not where the process gave them on LLVM's command line.
//
// - `scev-cheap-expansion-budget` (LLVM: 4) is how much arithmetic ScalarEvolution's
//   expander may spend recomputing a value "cheaply"; runtime unrolling gives up on a loop
//   whose trip count costs more. A block- or warp-stride loop, `for j in range(lane, n, 32)`
//   with `lane = thread_idx.x % 32`, has the trip count `(n - lane - 1) // 32` with `lane`
//   rebuilt from its truncation, which costs 10: LLVM never unrolled such loops, ptxas
//   unrolled them 4 times (4 loads in flight a thread) where nvcc's keep 16 (layernorm,
//   softmax_rows). At 12 LLVM unrolls them 8 times and ptxas keeps 16–32 in flight.
// - `unroll-partial-threshold` (NVPTX: a quarter of the full-unroll threshold, 75 at -O3) is
//   the size a partially unrolled loop body may reach; NVPTX expects ptxas to unroll small
//   loops further, and ptxas does not. At 75 nbody's 128-step inner loop was unrolled twice
//   and mandelbrot's early-exit escape loop 4 times (11.75 SASS instructions an iteration
//   against nvcc's 9.2), where NVVM unrolls them 8 and 16 times: with few warps a scheduler,
//   the unrolled copies are the only independent work ptxas can interleave. At 300, the -O3
//   full-unroll threshold, LLVM unrolls them as NVVM does.
// - `unroll-threshold` (300) bounds full unrolling: bitonic_sort's two nested barrier loops
//   (66 compare-exchange steps) estimate at ~310 and stayed loops, each step paying ~8
//   instructions of loop control and index arithmetic that nvcc's unrolled steps fold into
//   constant offsets. At 400 they are unrolled as nvcc does (with `mark_small_space_index` in
//   emit/arrays.rs and `keep_bit_tests` below: 32 registers and 514 SASS instructions,
//   nvcc's 32 and ~520).
//
// Unrolling copies loop bodies and changes no result. Loops with a barrier are never
// runtime-unrolled (their remainder would change which threads reach it), whatever these say.
void set_loop_heuristics() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto &options = cl::getRegisteredOptions();
    const std::string partial = std::to_string(kPartialUnrollThreshold);
    const std::pair<const char *, const char *> settings[] = {
        {"scev-cheap-expansion-budget", "12"},
        {"unroll-partial-threshold", partial.c_str()},
        {"unroll-threshold", "400"},
    };
    for (auto [name, value] : settings) {
      auto it = options.find(name);
      if (it == options.end() || it->second->getNumOccurrences() > 0) continue;
      it->second->addOccurrence(0, name, value);
    }
  });
}

TargetMachine *target_machine(LLVMTargetMachineRef tm) {
  return reinterpret_cast<TargetMachine *>(tm);
}

}  // namespace

extern "C" {

// Builds the optimization pipeline of `opt_level` (0..3) for `tm`.
void *pydevice_optimizer_new(LLVMTargetMachineRef tm, unsigned opt_level) {
  set_loop_heuristics();
  auto *o = new Optimizer();
  PipelineTuningOptions tuning;
  o->builder = std::make_unique<PassBuilder>(target_machine(tm), tuning, std::nullopt, &o->pic);
  o->builder->registerModuleAnalyses(o->mam);
  o->builder->registerCGSCCAnalyses(o->cgam);
  o->builder->registerFunctionAnalyses(o->fam);
  o->builder->registerLoopAnalyses(o->lam);
  o->builder->crossRegisterProxies(o->lam, o->fam, o->cgam, o->mam);
  o->builder->registerPeepholeEPCallback(
      [](FunctionPassManager &f, OptimizationLevel) {
        f.addPass(OneExtensionPass());
        f.addPass(FloorDivPass());
        f.addPass(SignTestPass());
      });
  o->builder->registerLateLoopOptimizationsEPCallback(
      [](LoopPassManager &l, OptimizationLevel) { l.addPass(LocalArrayUnrollPass()); });
  o->builder->registerVectorizerStartEPCallback(
      [](FunctionPassManager &f, OptimizationLevel) {
        f.addPass(SignVersionPass());
        f.addPass(RuntimeStrideUnrollPass());
      });
  o->level = opt_level == 0   ? OptimizationLevel::O0
             : opt_level == 1 ? OptimizationLevel::O1
             : opt_level == 2 ? OptimizationLevel::O2
                              : OptimizationLevel::O3;
  return o;
}

// Runs the pipeline on `module`, then forgets every analysis result. With `allow_leaf`, a
// leaf module gets the leaf pipeline. Returns 0 for the whole pipeline, 1 for the leaf
// pipeline, 2 for the leaf pipeline of a loop-free module.
int pydevice_optimizer_run(void *handle, LLVMModuleRef module, int allow_leaf) {
  auto *o = static_cast<Optimizer *>(handle);
  Module &m = *unwrap(module);
  bool leaf = allow_leaf && o->level != OptimizationLevel::O0 && is_leaf_module(m);
  // (At -O1 LLVM's own simplification pipeline is already lighter than the straight-line one.)
  bool straight = leaf && o->level.getSpeedupLevel() >= 2 && !has_loops(m);
  ModulePassManager passes;
  if (straight) {
    // Built once: its passes, unlike some of the per-module pipelines', are reusable.
    if (!o->straight) {
      o->straight = std::make_unique<ModulePassManager>();
      o->builder->invokePipelineStartEPCallbacks(*o->straight, o->level);
      o->straight->addPass(createModuleToFunctionPassAdaptor(straight_line_pipeline()));
    }
  } else if (o->level == OptimizationLevel::O0) {
    passes = o->builder->buildO0DefaultPipeline(o->level);
  } else if (leaf) {
    o->builder->invokePipelineStartEPCallbacks(passes, o->level);
    passes.addPass(createModuleToFunctionPassAdaptor(
        o->builder->buildFunctionSimplificationPipeline(o->level, ThinOrFullLTOPhase::None)));
    passes.addPass(o->builder->buildModuleOptimizationPipeline(o->level, ThinOrFullLTOPhase::None));
  } else {
    passes = o->builder->buildPerModuleDefaultPipeline(o->level);
  }
  (straight ? *o->straight : passes).run(m, o->mam);
  // What no pipeline expanded (-O0 has no InstCombine), without value ranges.
  for (Function &f : m)
    if (!f.isDeclaration()) expand_floor_divs(f, nullptr, nullptr);
  for (const char *name : {kFloorDiv, kFloorMod})
    if (Function *f = m.getFunction(name); f && f->use_empty()) f->eraseFromParent();
  if (o->level != OptimizationLevel::O0)
    for (Function &f : m)
      if (!f.isDeclaration()) keep_bit_tests(f);
  o->lam.clear();
  o->fam.clear();
  o->cgam.clear();
  o->mam.clear();
  // A loop-free leaf that SignVersionPass made two copies of gets the whole code generator:
  // skipping the straight-line passes there changed its machine code (lang/sign_versioning,
  // numba/records_subarray_copy: up to 8% more SASS).
  if (straight)
    for (Function &f : m)
      if (f.hasFnAttribute(kVersioned)) {
        f.removeFnAttr(kVersioned);
        straight = false;
      }
  return straight ? 2 : leaf ? 1 : 0;
}

void pydevice_optimizer_free(void *handle) { delete static_cast<Optimizer *>(handle); }

// Assembles the PTX code generator for `tm`; null if the target cannot emit assembly. With
// `straight_line`, it leaves out the passes that find nothing in a loop-free leaf module
// (`keep_codegen_pass`) and must be given only such modules.
void *pydevice_codegen_new(LLVMTargetMachineRef tm, int straight_line) {
  // NVPTX's pass configuration adds ExpandVariadics without registering it; registered, the
  // filter knows it by name (the back end never makes variadic functions or calls).
  static const bool registered = [] {
    initializeExpandVariadicsPass(*PassRegistry::getPassRegistry());
    return true;
  }();
  (void)registered;
  auto *c = new CodeGen();
  if (!add_codegen_passes(*static_cast<LLVMTargetMachine *>(target_machine(tm)), *c,
                          straight_line != 0)) {
    delete c;
    return nullptr;
  }
  return c;
}

// Generates PTX for `module` (already optimized; its data layout set). The text stays valid
// until the next call on `handle`. The module must stay alive until `handle` is freed.
void pydevice_codegen_run(void *handle, LLVMModuleRef module, const char **text, size_t *len) {
  auto *c = static_cast<CodeGen *>(handle);
  c->text.clear();
  c->passes.run(*unwrap(module));
  *text = c->text.data();
  *len = c->text.size();
}

// Registers the passes that the target's pass configuration registers when it is first
// created (`TargetPassConfig`'s constructor: every code-generation pass and the two alias
// analyses it needs), ~15% of assembling the first code generator: a thread that prepares a
// back end calls this while another creates the target machine. LLVM serializes it.
// (Registering more, the scalar and vectorizer passes too, made later code generation ~12%
// slower per module, with the same PTX; not investigated.)
void pydevice_register_passes() {
  PassRegistry &registry = *PassRegistry::getPassRegistry();
  initializeCodeGen(registry);
  initializeBasicAAWrapperPassPass(registry);
  initializeAAResultsWrapperPassPass(registry);
}

// Forgets what NVPTX cached about `module` (call before freeing a module that was optimized
// but not code-generated).
void pydevice_forget_module(LLVMModuleRef module) { clearAnnotationCache(unwrap(module)); }

void pydevice_codegen_free(void *handle) { delete static_cast<CodeGen *>(handle); }

}  // extern "C"
