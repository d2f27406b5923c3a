defmodule Bank.Monitor do
  @moduledoc """
  The example's property as a riarc monitor written in Elixir: a module with `spec/1`
  (Λ: which processes get a monitor) and the `:riarc_monitor` callbacks. The account's
  monitor keeps the balances told so far and rejects when one is told again; the
  clients get no monitor of their own.

      iex> {:ok, r} = :riarc.run({Bank.Demo, :main, [8, 20]}, Bank.Monitor, %{})
      iex> for %{mfa: {Bank, :init, _}, verdict: v} <- r.verdicts, do: v
      [:reject]

  Compiled without riarc on the code path, `@behaviour :riarc_monitor` is only a warning
  of the compiler; the module works the same.
  """
  @behaviour :riarc_monitor

  @doc "Λ: the account (a GenServer, asked as its callback module's init) gets a monitor."
  def spec({Bank, :init, [_mode_balance]}), do: {:ok, {__MODULE__, MapSet.new()}}
  def spec(_mfa), do: :undefined

  @impl true
  def analyse({:send, _from, _to, {_tag, {:ok, balance}}}, told) do
    if MapSet.member?(told, balance), do: :reject, else: {:next, MapSet.put(told, balance)}
  end

  def analyse(_event, told), do: {:next, told}

  @impl true
  def explain({:send, _from, _to, {_tag, {:ok, balance}}}, _told),
    do: "the new balance #{balance} was told to a second client: a withdrawal was lost"

  def explain(_event, _told), do: "no balance told twice"
end
