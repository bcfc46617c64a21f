// TEST HOOK, for tests only: SHARDLAB_TEST_STOP_AT=POINT:RANK makes that rank stop itself
// (raise(SIGSTOP)) when it reaches the named point, so a test can freeze one rank at an exact
// place — inside a checkpoint save, say — which a signal sent from outside hits only by luck.
// Unset (always, outside tests), it does nothing.
#pragma once

namespace shardlab {

// Points: "start" (launch/trainer.cpp: a training run's first collective, before it);
// "save" (optim/checkpoint.cpp: this rank's file written, before the ranks agree);
// "weights_rename" (model/weights_writer.cpp: a folder save's first shard renamed into place, the
// others not yet; rank 0, whoever writes); "validation" (train/train_session.cpp: a validation
// begun, before its first collective).
void test_hook_stop(const char* point, int rank);

} // namespace shardlab
