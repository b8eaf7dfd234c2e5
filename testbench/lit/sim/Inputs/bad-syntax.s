// not an instruction on line 2
  vfoo v1, v2
  halt
