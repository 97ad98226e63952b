import { FilterFlavour, LIKE_ESCAPE, likeContaining } from '../message-filter-sql';

/** Operator filters on PostgreSQL: `$n` parameters, timestamptz times, a case-sensitive LIKE. */
export const POSTGRES_FILTER: FilterFlavour = {
  placeholder: (n) => `$${n}`,
  // Text, which PostgreSQL casts to the bigint it is compared with.
  id: (id) => id,
  time: (params, instant) => `${params.add(instant.toISOString())}::timestamptz`,
  contains: (column, params, text) => `${column} LIKE ${params.add(likeContaining(text))} ESCAPE '${LIKE_ESCAPE}'`,
};
