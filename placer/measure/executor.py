"""What the runtime adds to kernel times in the simulator (no TensorFlow).

* Dispatch: every op pays its device's `dispatch` seconds (TF's executor
  work per op, plus the kernel launch on a GPU), so a unit of n ops pays n;
  ops the graph marks outside the training step (`OpGraph.in_step`) pay none
  (`Cluster.op_seconds`).
* A shared executor thread (`Cluster.serial_executor`): TF with one inter-op
  thread runs the ops of all the devices of a process on that one thread, so
  logical CPU devices never compute at once (the kernel of
  `placer.measure.fast` then schedules every device on one timeline).
* The two simulation levels a step time can come from (op or group), named
  in every report that quotes one.
"""

LEVEL_OP = "op"  # every op scheduled on its own, its outputs sent when it ends
LEVEL_GROUP = "group"  # a group's ops back to back, its outputs sent when the whole group ends
