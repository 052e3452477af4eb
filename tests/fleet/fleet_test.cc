// The fleet module's pure parts: sets, result tags, planning, the batch
// script, Slurm's job state, result records, running a command.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <functional>

#include "ki/fleet.h"
#include "testutil/testutil.h"

namespace ki::fleet {
namespace {

Digest D(char c) { return Sha256Of(std::string(1, c)); }
const std::string kKeyA(64, 'a'), kKeyB(64, 'b');

TEST(FleetSet, SameRunsInAnyOrderAreOneSet) {
  RunSet a = MakeRunSet({D('1'), D('2'), D('3')});
  RunSet b = MakeRunSet({D('3'), D('1'), D('2'), D('1')});
  EXPECT_EQ(a.id, b.id);
  ASSERT_EQ(b.runs.size(), 3u);
  EXPECT_LT(b.runs[0].raw(), b.runs[1].raw());
  EXPECT_NE(MakeRunSet({D('1'), D('2')}).id, a.id);
}

TEST(FleetTags, ResultTagRoundTripsAndFitsTheGrammar) {
  const std::string t = ResultTag(D('x'), kKeyA);
  EXPECT_TRUE(IsValidTag(t)) << t;
  auto p = ParseResultTag(t);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->run_prefix, D('x').hex().substr(0, 32));
  EXPECT_EQ(p->keyid_prefix, kKeyA.substr(0, 16));
  EXPECT_FALSE(ParseResultTag("ki-" + D('x').hex()));
  EXPECT_FALSE(ParseResultTag(t + "0"));
  EXPECT_FALSE(ParseResultTag("kifleet-" + std::string(32, 'G') + "-" + std::string(16, 'a')));
  EXPECT_EQ(RunTag(D('x')), "ki-" + D('x').hex());
}

TEST(FleetPlan, OnlyWhatHasNoResultIsSubmitted) {
  RunSet s = MakeRunSet({D('1'), D('2'), D('3')});
  // run 0: results by A and B; run 1: by A; run 2: none and not on the remote.
  std::vector<std::string> tags = {ResultTag(s.runs[0], kKeyA), ResultTag(s.runs[0], kKeyB),
                                   ResultTag(s.runs[1], kKeyA), ResultTag(s.runs[1], kKeyA),
                                   RunTag(s.runs[0]),           RunTag(s.runs[1]),
                                   "BenchmarkRun.something"};
  Plan one = PlanTasks(s, 1, tags, false);
  ASSERT_EQ(one.tasks.size(), 1u);
  EXPECT_EQ(one.tasks[0].index, 2u);
  EXPECT_EQ(one.tasks[0].array_id, 2u);
  EXPECT_EQ(one.runs_done, 2u);
  ASSERT_EQ(one.missing_runs.size(), 1u);
  EXPECT_EQ(one.missing_runs[0], s.runs[2]);
  EXPECT_EQ(one.results_per_run, (std::vector<size_t>{2, 1, 0}));

  Plan two = PlanTasks(s, 2, tags, false);
  std::vector<uint64_t> ids;
  for (const auto& t : two.tasks) ids.push_back(t.array_id);
  EXPECT_EQ(ids, (std::vector<uint64_t>{3, 4, 5}));  // run 1 replica 1; run 2 replicas 0 and 1
  EXPECT_EQ(two.tasks[0].replica, 1);
  EXPECT_EQ(two.runs_done, 1u);

  EXPECT_EQ(PlanTasks(s, 2, tags, true).tasks.size(), 6u);
  EXPECT_EQ(PlanTasks(s, 1, {}, false).tasks.size(), 3u);
}

TEST(FleetPlan, ArraySpecAndSlots) {
  EXPECT_EQ(ArraySpec({0, 1, 2, 3, 5, 7, 8}, 0), "0-3,5,7-8");
  EXPECT_EQ(ArraySpec({4}, 2), "4%2");
  EXPECT_EQ(ArraySpec({}, 0), "");
  auto s = SlotOfArrayId(7, 4, 2);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->index, 3u);
  EXPECT_EQ(s->replica, 1);
  EXPECT_FALSE(SlotOfArrayId(8, 4, 2));
  EXPECT_FALSE(SlotOfArrayId(0, 4, 0));
}

BatchSpec Spec() {
  BatchSpec b;
  b.set = MakeRunSet({D('1'), D('2')});
  b.replicas = 2;
  b.array = "0-3%2";
  b.task.remote = "oci://127.0.0.1:5000/ki/evidence";
  b.task.insecure = true;
  b.task.device = "cpu";
  b.task.timeout_s = 90;
  b.task.key = "runner's key";
  b.slurm.partition = "gpu";
  b.slurm.gpus = "h200:1";
  b.slurm.constraint = "h200";
  b.slurm.time = "30:00";
  b.slurm.account = "bench";
  b.slurm.extra = {"--exclusive"};
  return b;
}

TEST(FleetScript, NamesTheArrayTheResourcesAndEveryRun) {
  auto s = BatchScript(Spec());
  ASSERT_OK(s.status());
  for (const char* want : {"#!/bin/bash\n", "#SBATCH --array=0-3%2\n", "#SBATCH --partition=gpu\n",
                           "#SBATCH --gres=gpu:h200:1\n", "#SBATCH --constraint=h200\n", "#SBATCH --time=30:00\n",
                           "#SBATCH --account=bench\n", "#SBATCH --exclusive\n", "#SBATCH --output=ki-fleet-%A_%a.out\n",
                           " --remote 'oci://127.0.0.1:5000/ki/evidence' --insecure", "--replicas 2",
                           "--device 'cpu'", "--timeout 90", "--key 'runner'\\''s key'", "--runs - <<'KI_FLEET_RUNS'",
                           "KI_FLEET_RUNS\nwait $!\n"}) {
    EXPECT_NE(s->find(want), std::string::npos) << want << "\n" << *s;
  }
  const BatchSpec spec = Spec();
  for (const Digest& d : spec.set.runs) EXPECT_NE(s->find(d.str() + "\n"), std::string::npos);
  EXPECT_NE(s->find("#SBATCH --job-name=ki-fleet-" + spec.set.id.hex().substr(0, 12)), std::string::npos);
  // #SBATCH lines come before the first command (sbatch stops reading them there).
  EXPECT_LT(s->rfind("#SBATCH"), s->find("set -u"));
}

TEST(FleetScript, RefusesValuesThatWouldBreakTheirLine) {
  BatchSpec b = Spec();
  b.slurm.partition = "gpu\n#SBATCH --account=other";
  EXPECT_EQ(BatchScript(b).status().code(), Code::kInvalidInput);
  b = Spec();
  b.slurm.time = "1 day";
  EXPECT_EQ(BatchScript(b).status().code(), Code::kInvalidInput);
  b = Spec();
  b.task.key = "k\nrm -rf /";
  EXPECT_EQ(BatchScript(b).status().code(), Code::kInvalidInput);
  b = Spec();
  b.set.runs.clear();
  EXPECT_EQ(BatchScript(b).status().code(), Code::kInvalidInput);
}

TEST(FleetScript, RunsUnderBashAndFeedsTheRunsToTheTask) {
  // The script's own shell code, with `ki` replaced by a stand-in that
  // prints its arguments and stdin: the quoting and the heredoc as bash
  // reads them.
  test::TempDir dir;
  BatchSpec b = Spec();
  b.task.ki = dir.Join("fake ki");
  b.task.scratch = dir.path();
  test::WriteFileOrDie(b.task.ki, "#!/bin/bash\nprintf '<%s>' \"$@\"; echo; cat; exit 3\n");
  ASSERT_EQ(::chmod(b.task.ki.c_str(), 0755), 0);
  auto s = BatchScript(b);
  ASSERT_OK(s.status());
  test::WriteFileOrDie(dir.Join("job.sh"), *s);
  auto r = RunCommand({"env", "SLURM_ARRAY_TASK_ID=3", "bash", dir.Join("job.sh")}, "");
  ASSERT_OK(r.status());
  EXPECT_EQ(r->exit_code, 3) << r->err;
  EXPECT_NE(r->out.find("<--key><runner's key>"), std::string::npos) << r->out;
  EXPECT_NE(r->out.find("<--array-id><3>"), std::string::npos) << r->out;
  EXPECT_NE(r->out.find("\n" + b.set.runs[1].str() + "\n"), std::string::npos) << r->out;
  // The scratch directory went with the task.
  auto left = RunCommand({"bash", "-c", "ls \"$0\" | grep -c ki-fleet-task || true", dir.path()}, "");
  ASSERT_OK(left.status());
  EXPECT_EQ(left->out, "0\n");
}

TEST(FleetJobs, SqueueExpandsPendingRanges) {
  auto t = ParseSqueue("12_3|RUNNING|None\n12_[4-6,9%2]|PENDING|Resources\n13|PENDING|Priority\n");
  ASSERT_OK(t.status());
  ASSERT_EQ(t->size(), 5u);
  EXPECT_EQ((*t)[0].array_id, 3u);
  EXPECT_EQ((*t)[0].state, TaskState::kRunning);
  EXPECT_EQ((*t)[4].array_id, 9u);
  EXPECT_EQ((*t)[4].state, TaskState::kPending);
  EXPECT_EQ((*t)[4].detail, "Resources");
  EXPECT_EQ(ParseSqueue("garbage\n").status().code(), Code::kInvalidInput);
  EXPECT_EQ(ParseSqueue("12_x|RUNNING|None\n").status().code(), Code::kInvalidInput);
}

TEST(FleetJobs, SacctSkipsStepsAndReadsStates) {
  auto t = ParseSacct("7_0|COMPLETED|0:0\n7_0.batch|COMPLETED|0:0\n7_1|CANCELLED by 0|0:15\n7_2|NODE_FAIL|0:0\n"
                      "7_3|OUT_OF_MEMORY|0:125\n7_4|TIMEOUT|0:0\n");
  ASSERT_OK(t.status());
  ASSERT_EQ(t->size(), 5u);
  EXPECT_EQ((*t)[1].state, TaskState::kCancelled);
  EXPECT_EQ((*t)[1].detail, "0:15");
  EXPECT_EQ((*t)[2].state, TaskState::kNodeFail);
  EXPECT_EQ((*t)[3].state, TaskState::kOutOfMemory);
  EXPECT_EQ((*t)[4].state, TaskState::kTimeout);
  EXPECT_TRUE(IsFinal((*t)[0].state));
  EXPECT_FALSE(IsFinal(TaskState::kPending));
  EXPECT_EQ(TaskStateFromSlurm("CA"), TaskState::kCancelled);
  EXPECT_EQ(TaskStateFromSlurm("WHATEVER"), TaskState::kUnknown);
}

TEST(FleetJobs, ScontrolOneLinePerTask) {
  auto t = ParseScontrol(
      "JobId=2 ArrayJobId=1 ArrayTaskId=0 JobName=j JobState=COMPLETED Reason=None ExitCode=0:0\n"
      "JobId=3 ArrayJobId=1 ArrayTaskId=1 JobName=j JobState=FAILED Reason=NonZeroExitCode ExitCode=1:0\n"
      "JobId=1 ArrayJobId=1 ArrayTaskId=2-3 JobName=j JobState=PENDING Reason=Resources ExitCode=0:0\n"
      "JobId=9 JobName=other JobState=RUNNING\n");
  ASSERT_OK(t.status());
  ASSERT_EQ(t->size(), 4u);
  EXPECT_EQ((*t)[1].state, TaskState::kFailed);
  EXPECT_EQ((*t)[1].detail, "1:0");
  EXPECT_EQ((*t)[3].array_id, 3u);
  EXPECT_EQ((*t)[3].state, TaskState::kPending);
}

FleetResult SampleResult() {
  FleetResult r;
  r.run = D('r');
  r.keyid = kKeyA;
  r.runner = "runner";
  r.machine = "node-a";
  r.outcome = "rerun";
  r.status = "passed";
  r.rerun = D('n');
  r.verdict = Json{{"outcome", "reproduced"}};
  r.attestation = D('a');
  r.attestation_kind = "reproduced";
  r.log = D('l');
  r.job = "12";
  r.array_id = 4;
  r.node = "kinode";
  r.started_at = "2026-12-01T14:00:00Z";
  r.finished_at = "2026-12-01T14:00:09Z";
  return r;
}

TEST(FleetResult, RoundTrips) {
  FleetResult r = SampleResult();
  auto back = ResultFromJson(ResultToJson(r), "result");
  ASSERT_OK(back.status());
  EXPECT_EQ(ResultToJson(*back), ResultToJson(r));
  r.outcome = "failed";
  r.rerun.reset();
  r.failure_step = "pull";
  r.failure = "no such tag";
  back = ResultFromJson(ResultToJson(r), "result");
  ASSERT_OK(back.status());
  EXPECT_EQ(back->failure, "no such tag");
}

TEST(FleetResult, RefusesWhatIsNotARecord) {
  auto bad = [](const std::function<void(Json&)>& edit) {
    Json j = ResultToJson(SampleResult());
    edit(j);
    return ResultFromJson(j, "result").status();
  };
  EXPECT_EQ(bad([](Json& j) { j["format"] = "ki.fleet-result/v9"; }).code(), Code::kInvalidInput);
  EXPECT_EQ(bad([](Json& j) { j["run"] = 7; }).code(), Code::kInvalidInput);
  EXPECT_EQ(bad([](Json& j) { j["runner"]["keyid"] = "ABC"; }).code(), Code::kInvalidInput);
  EXPECT_EQ(bad([](Json& j) { j["outcome"] = "maybe"; }).code(), Code::kInvalidInput);
  EXPECT_EQ(bad([](Json& j) { j["rerun"] = nullptr; }).code(), Code::kInvalidInput);
  EXPECT_EQ(bad([](Json& j) { j["outcome"] = "failed"; }).code(), Code::kInvalidInput);  // no failure.step
  EXPECT_EQ(bad([](Json& j) { j["slurm"]["arrayTask"] = -1; }).code(), Code::kInvalidInput);
  Status s = bad([](Json& j) { j["status"] = 3; });
  EXPECT_NE(s.message().find("`status`"), std::string::npos) << s.message();
}

TEST(FleetCommand, FeedsStdinAndCollectsBothOutputs) {
  std::string big(1 << 20, 'x');  // more than a pipe holds: stdin and stdout must flow together
  auto r = RunCommand({"bash", "-c", "cat; echo err >&2; exit 7"}, big);
  ASSERT_OK(r.status());
  EXPECT_EQ(r->exit_code, 7);
  EXPECT_EQ(r->out, big);
  EXPECT_EQ(r->err, "err\n");
  EXPECT_EQ(RunCommand({"/nonexistent/sbatch"}, "").status().code(), Code::kIOError);
}

}  // namespace
}  // namespace ki::fleet
