package tablets.spark;

/**
 * The Python side of {@link NativeReads}: a py4j proxy that the tablets package registers.
 * Given a read of a tablet table, it returns the Dataset that reads the same rows with Spark's
 * Parquet scan, or null to keep the Python data source.
 */
public interface ReadPlanner {
  /**
   * @param session the analyzing session ({@link NativeReads#sessionKey})
   * @param provider the table's provider name (tablets_&lt;hex&gt;)
   * @param where conjuncts of the query's own filter on the table, as Spark SQL on bare column
   *     names joined by AND ("" for none); only ones that hold or fail alike on every row
   * @return an org.apache.spark.sql.classic.Dataset, or null
   */
  Object plan(String session, String provider, String where);
}
