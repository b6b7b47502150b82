package tablets.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenContext;
import org.apache.spark.sql.catalyst.expressions.codegen.ExprCode;
import org.apache.spark.sql.types.BooleanType$;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.unsafe.types.UTF8String;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.codegen.CodeBlock;
import org.apache.spark.sql.catalyst.expressions.codegen.FalseLiteral$;
import org.apache.spark.sql.catalyst.expressions.codegen.JavaCode;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * {@code tablets_live(key, row)}: true unless the row {@code row} of the tablet {@code key} is in
 * its deletion vector ({@link DeletionVectors}, which the expression carries).
 */
public final class LiveRow extends Expression implements java.io.Serializable {
  private static final long serialVersionUID = 1L;

  private final Expression key;
  private final Expression row;
  private final DeletionVectors vectors;

  public LiveRow(Expression key, Expression row, DeletionVectors vectors) {
    this.key = key;
    this.row = row;
    this.vectors = vectors;
  }

  @Override
  public Seq<Expression> children() {
    return CollectionConverters.asScala(List.of(key, row)).toList();
  }

  @Override
  public DataType dataType() {
    return BooleanType$.MODULE$;
  }

  @Override
  public boolean nullable() {
    return false;
  }

  @Override
  public String prettyName() {
    return "tablets_live";
  }

  @Override
  public Object eval(InternalRow input) {
    Object k = key.eval(input);
    Object r = row.eval(input);
    if (k == null || r == null) {
      return true;
    }
    return vectors.byTag()
        ? vectors.liveByTag((Long) k, (Long) r)
        : vectors.liveByName((UTF8String) k, (Long) r);
  }

  @Override
  public ExprCode doGenCode(CodegenContext ctx, ExprCode ev) {
    String ref = ctx.addReferenceObj("tabletsDeletionVectors", vectors, DeletionVectors.class.getName());
    String method = vectors.byTag() ? "liveByTag" : "liveByName";
    ExprCode k = key.genCode(ctx);
    ExprCode r = row.genCode(ctx);
    // the scan's file name and row index are never NULL; a NULL key would read as live
    String code =
        k.code() + "\n" + r.code() + "\n"
            + "boolean " + ev.value() + " = " + k.isNull() + " || " + r.isNull() + " || "
            + ref + "." + method + "(" + k.value() + ", " + r.value() + ");";
    return ev.copy(
        new CodeBlock(seq(List.of(code)), seq(List.<JavaCode>of())),
        FalseLiteral$.MODULE$,
        ev.value());
  }

  @Override
  public Expression withNewChildrenInternal(IndexedSeq<Expression> children) {
    return new LiveRow(children.apply(0), children.apply(1), vectors);
  }

  @Override
  public int productArity() {
    return 3;
  }

  @Override
  public Object productElement(int n) {
    switch (n) {
      case 0: return key;
      case 1: return row;
      case 2: return vectors;
      default: throw new IndexOutOfBoundsException(Integer.toString(n));
    }
  }

  @Override
  public boolean canEqual(Object that) {
    return that instanceof LiveRow;
  }

  private static <T> Seq<T> seq(List<T> items) {
    return CollectionConverters.asScala(items).toList();
  }
}
