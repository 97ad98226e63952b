// @ts-check
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';

/**
 * ESLint over the library, its tests, the benchmarks and the sample app: the recommended rules
 * with type information, minus those that do not fit this code base (each with the reason).
 * Formatting is Prettier's (`npm run format`): the rules that would argue with it are off.
 */
export default tseslint.config(
  { ignores: ['dist/', 'dist-sample/', 'node_modules/', 'coverage/'] },
  {
    files: ['lib/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts', 'sample-app/**/*.ts'],
    extends: [eslint.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // Rows from `query()`, parsed JSON and broker deliveries are `any` in the drivers' types;
      // the code checks their shape where it matters. These rules would ask for a cast on every
      // column read, which hides mistakes rather than finding them.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // An async function without `await` still earns its keyword: it implements a
      // Promise-returning contract (`OutboxTransport.send`, a migration's `down`) and turns a
      // throw into a rejection.
      '@typescript-eslint/require-await': 'off',
      // Matching control characters is the point of the regexes that have them: they keep text
      // from the wire out of log lines and refuse NUL before it reaches a column.
      'no-control-regex': 'off',
      // Messages about bad input describe a value of any shape with `String(value)` on purpose;
      // objects pasted into template literals are still caught by restrict-template-expressions.
      '@typescript-eslint/no-base-to-string': 'off',
      // Rejecting with what a `catch` caught passes the original failure on unchanged.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingAny: true, allowThrowingUnknown: true }],
      // A variable a callback reads before it is assigned (a handler set up first) cannot be const.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // A leading underscore marks a parameter an interface requires, or a key left out of a rest object.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
      // The promise rules stay on at full strength: a promise nobody awaits or handles is how a
      // library crashes its host process with an unhandled rejection.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
    },
  },
  {
    files: ['test/**/*.ts', 'sample-app/test/**/*.ts'],
    rules: {
      // `expect(service.method).toHaveBeenCalled()` and jest mocks pass methods around unbound by design.
      '@typescript-eslint/unbound-method': 'off',
      // Tests hand classes to Nest (`providers`) and TypeORM (`migrations`), whose own types say `Function`.
      '@typescript-eslint/no-unsafe-function-type': 'off',
    },
  },
  prettier,
);
