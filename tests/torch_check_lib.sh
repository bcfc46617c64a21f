# What tests/torch_reference_check.sh (GPT-2) and tests/torch_llama_check.sh (Llama) share,
# sourced by both: shardlab's gradients against float64 PyTorch (tools/torch_reference.py picks
# the family from the weights' config), activation checkpointing bitwise, and `shardlab train`
# replayed step by step. The caller sets `shardlab`, `ref` (the reference's command, an array) and
# `batch` (the gradients' --data/--batch/--seq), and runs in its work directory, where data.txt
# is the corpus. Tolerances are the reference's (fp32 1e-5, bf16 1e-2 relative on gradients).

# torch_grads WEIGHTS: fp32 and bf16 gradients; leaves g32.safetensors and g16.safetensors.
torch_grads() {
  "$shardlab" reference grads --weights "$1" "${batch[@]}" --out g32.safetensors
  "${ref[@]}" grads --weights "$1" "${batch[@]}" --ours g32.safetensors --precision fp32
  "$shardlab" reference grads --weights "$1" "${batch[@]}" --precision bf16 --out g16.safetensors
  "${ref[@]}" grads --weights "$1" "${batch[@]}" --ours g16.safetensors --precision bf16
}

# checkpointing_bitwise WEIGHTS: --checkpoint all and every:2 give torch_grads' files, byte for byte.
checkpointing_bitwise() {
  local p base ck
  for p in fp32 bf16; do
    base=$([ $p = fp32 ] && echo g32 || echo g16)
    for ck in all every:2; do
      "$shardlab" reference grads --weights "$1" "${batch[@]}" --precision $p --checkpoint $ck \
        --out ck.safetensors >/dev/null
      cmp "$base.safetensors" ck.safetensors
      echo "ok: $p --checkpoint $ck bitwise identical"
    done
  done
}

# replay_args WEIGHTS MICRO_BATCH STEPS WARMUP DECAY: sets `run` (shardlab train's flags) and
# `ref_run` (the reference's) for one schedule: accumulation 2, clipping, warmup + DECAY (cosine or
# linear), decay groups.
replay_args() {
  local schedule=(--data data.txt --micro-batch "$2" --grad-accum 2 --steps "$3" --lr 1e-3
    --warmup "$4" --schedule "$5" --min-lr-ratio 0.1 --grad-clip 1.0 --beta1 0.9 --beta2 0.95
    --eps 1e-8 --weight-decay 0.1)
  run=(--init "$1" "${schedule[@]}")
  ref_run=(--weights "$1" "${schedule[@]}")
}

# train_replay: `shardlab train "${run[@]}"` in fp32 and bf16 (one rank, stage 0: the stages are
# bitwise equal to each other), each step held to the reference's replay of it.
train_replay() {
  local p
  for p in fp32 bf16; do
    "$shardlab" train "${run[@]}" --precision $p --val-every 0 --quiet --out "t_$p" >/dev/null
    "${ref[@]}" train "${ref_run[@]}" --ours "t_$p/steps.jsonl" --precision $p
  done
}
