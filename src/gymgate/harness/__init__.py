"""What runs refs: one ref through the acceptance paths (run.py), the commands that run them (accept.py: accept
and up; matrix.py; bisect.py; draft.py: case new; shards.py: merge and shard-costs; review.py: compare and ack),
reruns of what did not pass (reruns.py), a bump judged end to end against its baseline (bump.py), and the live
progress view (progress.py). Verdicts are verdict.py's; renderings report/'s."""
