// How long a job has run (cohort jobs, `run_time_s` and `total_run_time_s`): the current (or
// last) attempt's wall time, and the sum over all of its attempts, so that a job requeued after
// failures or preemptions shows what it has really run and not only its latest start.
#pragma once

#include "common/time.h"
#include "model/job.h"

namespace cohort {

// The current attempt's wall time from its placement: until `now` while it holds its nodes,
// until its end once it ended; zero if it was never placed, or is pending again.
Duration AttemptRunTime(const Job& job, Timestamp now);

// Every attempt's wall time: the ended ones in its history, those dropped from it (their GPU
// time over the job's GPUs), and the current one while it runs.
Duration TotalRunTime(const Job& job, Timestamp now);

}  // namespace cohort
