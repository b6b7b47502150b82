package tablets.spark;

import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/** {@code spark.sql.extensions=tablets.spark.TabletsExtensions}: installs {@link NativeReads}. */
public final class TabletsExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectResolutionRule(
        new AbstractFunction1<org.apache.spark.sql.SparkSession, Rule<LogicalPlan>>() {
          @Override
          public Rule<LogicalPlan> apply(org.apache.spark.sql.SparkSession session) {
            return new NativeReads(session);
          }
        });
    return BoxedUnit.UNIT;
  }
}
