# Edits a golden file as a regression would move it: edit-golden.py FILE CASE FIELD DELTA
# adds DELTA to the top-level FIELD of CASE, and to every op's cycles.
import json, sys
path, case, field, delta = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
g = json.load(open(path))
g[case][field] += delta
for op in g[case]["ops"]:
    g[case]["ops"][op] += delta
json.dump(g, open(path, "w"), indent=1, sort_keys=True)
