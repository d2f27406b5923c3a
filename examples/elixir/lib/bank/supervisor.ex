defmodule Bank.Supervisor do
  @moduledoc """
  The supervisor of the account (`Bank`), a module-based `Supervisor`.

      iex> {:ok, _sup} = Bank.Supervisor.start_link({:racy, 100})
  """
  use Supervisor

  @doc "Starts the supervisor and the account (`{mode, balance}`) under it."
  @spec start_link({Bank.mode(), non_neg_integer}) :: Supervisor.on_start()
  def start_link(arg), do: Supervisor.start_link(__MODULE__, arg)

  @impl true
  def init(arg), do: Supervisor.init([{Bank, arg}], strategy: :one_for_one)
end
