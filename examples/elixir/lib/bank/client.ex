defmodule Bank.Client do
  @moduledoc """
  A client of the account: a Task (`Task.start_link(Bank.Client, :run, [root, n])`)
  that withdraws 1, `n` times, one after the other, and sends `root` the replies.

  Its first withdrawal is sent without waiting (`:gen_server.send_request/2`), then the
  client tells `root` it is queued, so that the root can release a burst of withdrawals
  at once (see `Bank.Demo`).
  """

  @doc "Withdraws 1, `n` times, then sends `root` the replies in order."
  @spec run(pid, pos_integer) :: {:replies, pid, [{:ok, non_neg_integer} | {:error, :insufficient}]}
  def run(root, n) do
    request = :gen_server.send_request(Bank, {:withdraw, 1})
    send(root, {:queued, self()})
    {:reply, first} = :gen_server.wait_response(request, :infinity)
    send(root, {:replies, self(), [first | for(_ <- 2..n//1, do: Bank.withdraw(1))]})
  end
end
