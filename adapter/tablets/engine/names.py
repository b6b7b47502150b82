"""Column names and row kinds shared by the planner, the executor and the per-task sinks.

A module of its own so that Spark's Python workers, which run the sinks, import no sqlglot."""

from tablets.storage.tablet import ROW_INDEX

S_MARK = "__tablets_s"
T_MARK = "__tablets_t"
CLAUSE = "__tablets_clause"
KIND = "__tablets_kind"
TID = "__tablets_tid"
ROW = ROW_INDEX  # the scan's row index, kept under its name in the pairs
SID = "__tablets_sid"  # source row id (the anti join that finds unpaired source rows)
IMAGE_PREFIX = "__tablets_n_"
OUTSIDE = "__tablets_outside"  # the pair's act on its target row is that row's one BY SOURCE event (Clause.outside)
VIOLATION = "__tablets_violation"  # the constraint a written row breaks (engine.constraints), else NULL

# kinds of rows in the streams
K_DELETE, K_UPDATE, K_UNCHANGED, K_INSERT = "D", "U", "N", "I"
K_REFUSE = "X"  # a pair that would make an insert duplicate a key: the statement fails
K_REPLACE = "R"  # a pair whose target row is deleted and whose source row inserted (ActionKind.REPLACE)
# an UPDATE's pair alike in every column Spark read: its merge task compares the columns Spark
# left out (``alike``) and makes it K_UPDATE or K_UNCHANGED
K_COMPARE = "Q"
# the one-shuffle plan (pairs_sql.one_shuffle_pairs): every source row comes as a candidate insert,
# and every source row that paired with a target row sends a marker; a task inserts the
# candidates without a marker
K_CANDIDATE, K_PAIRED = "C", "P"
