// The time model beside the measurement (issue 22 item 3): `train --profile FILE` adds to each
// rank's report.json "time" the prediction of plan/time_model.h — predicted_step_ms and a
// "predicted" object per component — and a "vs" object holding each component measured and
// predicted, and the one that missed most; the end-of-run table and `shardlab report` print it.
#pragma once

#include "plan/time_model.h"

#include <nlohmann/json.hpp>

namespace shardlab {

// Adds predicted_step_ms, "predicted" (time_json) and "vs" to a rank report's "time" object,
// which holds the measured median_step_ms and median_exposed_comm_ms (launch/train_report.cpp).
// Measured compute is median step - median exposed communication: everything the compute stream
// did, update and offload included, so it is held against predicted compute + offload. Copies
// and the host update are not timed apart in a run: they are predicted only (null measured).
void add_time_prediction(nlohmann::json& rank_report, const TimePrediction& t,
                         const std::string& profile);

// "rank i predicted vs measured: ..." lines; nothing when the report has no prediction.
void print_time_comparison(const nlohmann::json& rank_report);

} // namespace shardlab
