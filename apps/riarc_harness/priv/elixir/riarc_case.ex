# ExUnit with a riarc property checked while tests run (docs/elixir.md, "Properties in
# ExUnit tests"). Elixir source shipped with riarc_harness and compiled by Elixir's own
# compiler (elixirc), not by rebar3; it calls riarc_watch, which does the work for the
# Common Test hook and the EUnit fixture too.
#
# A reject, an error or an inconclusive verdict (or a riarc error, an invariant violation,
# an overload) fails the test with an ExUnit.AssertionError whose message is riarc's
# report: the verdicts and the explanations (the last events, the one that decided).
# Accepts and partitions with no verdict (no violation seen) pass.

defmodule Riarc.ExUnit do
  @moduledoc """
  `check(property, fun)` runs `fun` in the test's process with `property` (a property
  file's name or a Spec module) watched on that process and everything it spawns, then
  fails the test if the property failed. `check(property, target, fun, opts)` watches
  `target` instead (`:self`, a pid, a registered name, `{:application, app}`,
  `{:supervisor, ref}`, or a list); `opts`: `strict: true` (a property that monitored
  nothing fails), `riarc: %{...}` (riarc:attach/3's options), `dirs: [...]` (where a
  relative property file is looked for first).
  """

  def check(property, fun), do: check(property, :self, fun, [])

  def check(property, target, fun, opts \\ []) do
    watch = start!(property, target, opts)

    ran =
      try do
        {:returned, fun.()}
      catch
        kind, reason -> {:raised, kind, reason, __STACKTRACE__}
      end

    case ran do
      {:returned, value} ->
        finish!(watch)
        value

      {:raised, kind, reason, stacktrace} ->
        # The test's own failure is the one ExUnit shows; the property's report, when it
        # failed too, is printed beside it.
        case :riarc_watch.stop(watch) do
          {:ok, %{status: :fail, report: report}} ->
            IO.puts("riarc: the property failed\n" <> List.to_string(report))

          _ ->
            :ok
        end

        :erlang.raise(kind, reason, stacktrace)
    end
  end

  @doc "Starts watching `target` (default the calling process) with `property`."
  def start!(property, target \\ :self, opts \\ []) do
    case :riarc_watch.start(property, target, watch_opts(opts)) do
      {:ok, watch} -> watch
      {:error, reason} -> raise ExUnit.AssertionError, message: "riarc: " <> sentence(reason)
    end
  end

  @doc "Stops a watch; raises ExUnit.AssertionError with riarc's report if the property failed."
  def finish!(watch) do
    case :riarc_watch.stop(watch) do
      {:ok, %{status: :pass}} ->
        :ok

      {:ok, %{status: :fail, report: report}} ->
        raise ExUnit.AssertionError,
          message: "riarc: the property failed\n" <> List.to_string(report)

      {:error, reason} ->
        raise ExUnit.AssertionError, message: "riarc: " <> sentence(reason)
    end
  end

  defp sentence(reason), do: List.to_string(:riarc_watch.format_error(reason))

  defp watch_opts(opts) do
    opts
    |> Map.new()
    |> Map.update(:dirs, [], fn dirs -> Enum.map(dirs, &to_charlist/1) end)
  end
end

defmodule RiarcCase do
  @moduledoc """
  `use RiarcCase, property: "props/no_error.prop"` checks the property in every test of
  the module: each test's process, and everything it spawns, is watched from the test's
  setup to its end, and a test whose property failed fails (on_exit). Options as
  `Riarc.ExUnit.check/4`, with `target:` (default `:self`). Use it after `use ExUnit.Case`.
  """

  defmacro __using__(opts) do
    {property, opts} = Keyword.pop!(opts, :property)
    {target, opts} = Keyword.pop(opts, :target, :self)

    quote do
      setup do
        watch = Riarc.ExUnit.start!(unquote(property), unquote(target), unquote(opts))
        # on_exit runs after the test's process has ended; the watch detached then
        # already (its guardian ended) and kept the verdicts for finish!/1.
        ExUnit.Callbacks.on_exit(fn -> Riarc.ExUnit.finish!(watch) end)
        :ok
      end
    end
  end
end
