/** A statement and its parameters, as TypeORM's `query(sql, params)` takes them. */
export interface SqlQuery {
  sql: string;
  params: unknown[];
}
