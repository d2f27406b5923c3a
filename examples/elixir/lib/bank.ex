defmodule Bank do
  @moduledoc """
  The example's service: one account, a GenServer that should never pay out the same
  balance twice. Each withdrawal of `amount` replies `{:ok, new_balance}`; withdrawals
  are serialised by the server, so the balances handed out strictly decrease.

  Started `:racy` it has a real lost-update bug: to stay responsive, the server hands
  each withdrawal to a settle Task (`Task.start(Bank, :settle, ...)`) with the balance
  it holds at that moment; the Task replies to the client and writes the new balance
  back later. Two withdrawals served before the first write both start from the same
  balance: both clients are told the same new balance, and one withdrawal is lost.
  Started `:safe`, the server settles each withdrawal itself, as it should.

      iex> {:ok, _} = Bank.start_link({:safe, 10})
      iex> Bank.withdraw(3)
      {:ok, 7}
  """
  use GenServer

  @type mode :: :racy | :safe

  @doc "Starts the account, registered locally as `Bank`, holding `balance`."
  @spec start_link({mode, non_neg_integer}) :: GenServer.on_start()
  def start_link({mode, balance}) when mode in [:racy, :safe] do
    GenServer.start_link(__MODULE__, {mode, balance}, name: __MODULE__)
  end

  @doc "Withdraws `amount`: `{:ok, new_balance}` or `{:error, :insufficient}`."
  @spec withdraw(pos_integer) :: {:ok, non_neg_integer} | {:error, :insufficient}
  def withdraw(amount), do: GenServer.call(__MODULE__, {:withdraw, amount})

  @doc "The balance the server holds now."
  @spec balance() :: non_neg_integer
  def balance, do: GenServer.call(__MODULE__, :balance)

  @impl true
  def init({mode, balance}), do: {:ok, {mode, balance}}

  @impl true
  def handle_call({:withdraw, amount}, _from, {_, balance} = state) when amount > balance do
    {:reply, {:error, :insufficient}, state}
  end

  def handle_call({:withdraw, amount}, _from, {:safe, balance}) do
    {:reply, {:ok, balance - amount}, {:safe, balance - amount}}
  end

  def handle_call({:withdraw, amount}, from, {:racy, balance} = state) do
    # The bug: the Task settles from the balance read now and writes it back later; the
    # server serves other withdrawals in between, from the same balance.
    {:ok, _} = Task.start(Bank, :settle, [self(), from, balance, amount])
    {:noreply, state}
  end

  def handle_call(:balance, _from, {_, balance} = state), do: {:reply, balance, state}

  @impl true
  def handle_cast({:set, balance}, {mode, _old}), do: {:noreply, {mode, balance}}

  @doc false
  # A settle Task of the racy server: replies to the client, then writes the balance back.
  def settle(bank, from, balance, amount) do
    GenServer.reply(from, {:ok, balance - amount})
    GenServer.cast(bank, {:set, balance - amount})
  end
end
